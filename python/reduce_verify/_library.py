"""ctypes over libreduce_verify_c.so (capi/reduce_verify_c.h): the only way this package
reaches the core, so no torch C++ ABI is involved and one build serves every torch.

The library is looked up, in order, at $REDUCE_VERIFY_LIB and in the package's _lib/ folder
(where `pip install ./python` copies it); it is loaded on first use."""

import ctypes
import os
import pathlib
import threading
from typing import Any, Dict, List, Optional, Tuple

from .errors import InputError, InternalError, LibraryNotFound, RuntimeFailure, Unsupported

API_VERSION = 5  # RV_C_API_VERSION this package speaks
LIBRARY_NAME = "libreduce_verify_c.so"
OP_SUM, OP_MEAN = 0, 1
DTYPE_F32, DTYPE_BF16, DTYPE_F16 = 0, 1, 2  # rv_dtype

_STATUS_ERRORS = {1: InputError, 2: RuntimeFailure, 3: InternalError, 4: Unsupported}

# Every C function the package calls, declared once: name -> (restype, argtypes). Pointers
# pass as addresses (tensors give data_ptr()); a CUDA stream as its handle or None.
_c = ctypes
_p = _c.c_void_p
SIGNATURES: Dict[str, Tuple[Any, List[Any]]] = {
    "rv_last_error": (_c.c_char_p, []),
    "rv_api_version": (_c.c_int, []),
    "rv_built_with_cuda": (_c.c_int, []),
    "rv_library_info": (_c.c_char_p, []),
    # Reductions of W stacked slots and digests (tensors.py).
    "rv_fixed_order_reduce_stacked": (_c.c_int, [_p, _c.c_uint32, _c.c_size_t, _c.c_size_t,
                                                 _c.c_int, _p]),
    "rv_exact_reduce_stacked": (_c.c_int, [_p, _c.c_uint32, _c.c_size_t, _c.c_size_t,
                                           _c.c_int, _p]),
    "rv_digest_floats": (_c.c_int, [_p, _c.c_size_t, _c.c_char_p]),
    "rv_digest_values": (_c.c_int, [_p, _c.c_size_t, _c.c_int, _c.c_char_p]),
    "rv_fixed_order_reduce_stacked_dtype": (_c.c_int, [_p, _c.c_uint32, _c.c_size_t, _c.c_size_t,
                                                       _c.c_int, _c.c_int, _p]),
    "rv_exact_reduce_stacked_dtype": (_c.c_int, [_p, _c.c_uint32, _c.c_size_t, _c.c_size_t,
                                                 _c.c_int, _c.c_int, _p]),
    "rv_cuda_fixed_order_reduce_stacked_dtype": (_c.c_int, [_c.c_int, _p, _c.c_uint32,
                                                            _c.c_size_t, _c.c_size_t, _c.c_int,
                                                            _c.c_int, _p, _p]),
    "rv_cuda_exact_reduce_stacked_dtype": (_c.c_int, [_c.c_int, _p, _c.c_uint32, _c.c_size_t,
                                                      _c.c_size_t, _c.c_int, _c.c_int, _p, _p]),
    "rv_cuda_fixed_order_reduce_stacked": (_c.c_int, [_c.c_int, _p, _c.c_uint32, _c.c_size_t,
                                                      _c.c_size_t, _c.c_int, _p, _p]),
    "rv_cuda_exact_reduce_stacked": (_c.c_int, [_c.c_int, _p, _c.c_uint32, _c.c_size_t,
                                                _c.c_size_t, _c.c_int, _p, _p]),
    # The exact gradient accumulator (accumulate.py): a handle, then its arguments.
    "rv_accumulator_create": (_c.c_int, [_c.c_size_t, _c.c_int, _p]),
    "rv_accumulator_destroy": (_c.c_int, [_p]),
    "rv_accumulator_add": (_c.c_int, [_p, _p, _c.c_size_t, _c.c_size_t, _p]),
    "rv_accumulator_add_dtype": (_c.c_int, [_p, _p, _c.c_size_t, _c.c_size_t, _c.c_int, _p]),
    "rv_accumulator_add_rows": (_c.c_int, [_p, _p, _c.c_size_t, _c.c_size_t, _c.c_size_t,
                                          _c.c_size_t, _c.c_int, _p]),
    "rv_accumulator_end_micro_batch": (_c.c_int, [_p]),
    "rv_accumulator_end_micro_batch_deferred": (_c.c_int, [_p]),
    "rv_accumulator_resolve": (_c.c_int, [_p]),
    "rv_accumulator_clear": (_c.c_int, [_p, _p]),
    "rv_accumulator_agreement_size": (_c.c_int, [_p, _p]),
    "rv_accumulator_agreement_words": (_c.c_int, [_p, _c.c_int64, _c.c_int, _c.c_uint64, _p,
                                                  _p]),
    "rv_accumulator_plan": (_c.c_int, [_p, _p, _c.c_uint32, _p]),
    "rv_accumulator_export_digits": (_c.c_int, [_p, _p, _p]),
    "rv_accumulator_finish": (_c.c_int, [_p, _p, _c.c_int, _c.c_uint64, _p, _p]),
    "rv_accumulator_finish_dtype": (_c.c_int, [_p, _p, _c.c_int, _c.c_uint64, _c.c_int, _p,
                                               _p]),
    "rv_accumulator_finish_alone": (_c.c_int, [_p, _c.c_int, _c.c_uint64, _c.c_int, _p, _p]),
    "rv_accumulator_footprint": (_c.c_int, [_p, _p, _p, _p]),
    # The trail's digest tree on a GPU (trail.py). Not part of RV_C_API_VERSION: an older
    # library lacks them, and the trail then hashes on the host (optional()).
    "rv_cuda_digest_tree_leaves": (_c.c_int, [_c.c_int, _p, _c.c_size_t, _p, _p]),
    "rv_cuda_digest_tree_leaves_of_pieces": (_c.c_int, [_c.c_int, _p, _c.c_size_t, _p, _p]),
}
OPTIONAL = frozenset({"rv_cuda_digest_tree_leaves", "rv_cuda_digest_tree_leaves_of_pieces"})

_lock = threading.Lock()
_library: Optional[ctypes.CDLL] = None


def packaged_file(variable: str, folder: str, name: str, how_to_get_it: str) -> pathlib.Path:
    """$variable if set (it must name a file), else the package's own folder/name; raises
    LibraryNotFound naming both places and `how_to_get_it`."""
    override = os.environ.get(variable)
    if override:
        path = pathlib.Path(override)
        if not path.is_file():
            raise LibraryNotFound(f"{variable}={override}: no such file")
        return path
    packaged = pathlib.Path(__file__).resolve().parent / folder / name
    if packaged.is_file():
        return packaged
    raise LibraryNotFound(f"{name} not found: not at ${variable} (unset) nor at {packaged}. "
                          + how_to_get_it)


def library_path() -> pathlib.Path:
    """Where the library will be loaded from (raises LibraryNotFound naming the places)."""
    return packaged_file(
        "REDUCE_VERIFY_LIB", "_lib", LIBRARY_NAME,
        "Install the package with `pip install ./python` (it builds the library), or point "
        "REDUCE_VERIFY_LIB at a built one (./ci/build.sh builds build/capi/).")


def library() -> ctypes.CDLL:
    """The loaded library, its signatures declared and its C API version checked."""
    global _library
    with _lock:
        if _library is None:
            path = library_path()
            try:
                handle = ctypes.CDLL(str(path))  # CDLL releases the GIL during every call
            except OSError as error:
                raise LibraryNotFound(f"{path}: cannot be loaded: {error}") from error
            for name, (restype, argtypes) in SIGNATURES.items():
                try:
                    function = getattr(handle, name)
                except AttributeError as error:
                    if name in OPTIONAL:
                        continue
                    raise LibraryNotFound(f"{path} lacks {name}: an older build?") from error
                function.restype = restype
                function.argtypes = argtypes
            version = handle.rv_api_version()
            if version != API_VERSION:
                raise LibraryNotFound(f"{path} speaks C API {version}; this package speaks "
                                      f"{API_VERSION}: rebuild and reinstall together")
            _library = handle
        return _library


def optional(name: str) -> Optional[Any]:
    """One of the OPTIONAL functions, declared, or None where this library lacks it."""
    return getattr(library(), name, None)


def check(status: int) -> None:
    """Raises the exception class of a non-zero rv_status with the library's message."""
    if status == 0:
        return
    message = library().rv_last_error().decode("utf-8", "replace")
    raise _STATUS_ERRORS.get(status, InternalError)(message or f"status {status}")


def built_with_cuda() -> bool:
    return bool(library().rv_built_with_cuda())


def library_info() -> str:
    """One line naming the library: tool, commit, C API, CUDA, xxHash."""
    return library().rv_library_info().decode()
