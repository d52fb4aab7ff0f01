"""The exceptions of reduce_verify. Each names its cause; nothing is ever reduced another way
instead of raising."""


class ReduceVerifyError(Exception):
    """Base of every error this package raises on purpose."""


class InputError(ReduceVerifyError, ValueError):
    """Bad input: a tensor of another dtype, mixed devices, bad arguments."""


class WorldDisagreement(InputError):
    """The ranks of a process group disagree on a bucket before any gradient moved (its
    length, the contract, the op, the step): a world that would reduce mismatched data."""


class RuntimeFailure(ReduceVerifyError, RuntimeError):
    """The library failed at run time: the thread's floating-point state, a CUDA error,
    memory."""


class WorldTimeout(RuntimeFailure):
    """A hook's agreement with the other ranks did not complete within its deadline
    (HookState's agreement_timeout): a rank that runs another hook, or none, or has stopped."""


class Unsupported(ReduceVerifyError):
    """A GPU tensor and a libreduce_verify_c.so built without CUDA (or a big-endian host)."""


class LibraryNotFound(ReduceVerifyError, ImportError):
    """libreduce_verify_c.so could not be found or is another version of the C ABI."""


class InternalError(ReduceVerifyError, RuntimeError):
    """A bug in reduce-verify (the message says so)."""
