"""ctypes over libreduce_verify_c.so (capi/reduce_verify_c.h): the only way this package
reaches the core, so no torch C++ ABI is involved and one build serves every torch.

The library is looked up, in order, at $REDUCE_VERIFY_LIB and in the package's _lib/ folder
(where `pip install ./python` copies it); it is loaded on first use."""

import ctypes
import os
import pathlib
import threading

from .errors import InputError, InternalError, LibraryNotFound, RuntimeFailure, Unsupported

API_VERSION = 3  # RV_C_API_VERSION this package speaks
LIBRARY_NAME = "libreduce_verify_c.so"
OP_SUM, OP_MEAN = 0, 1
DTYPE_F32, DTYPE_BF16, DTYPE_F16 = 0, 1, 2  # rv_dtype

_STATUS_ERRORS = {1: InputError, 2: RuntimeFailure, 3: InternalError, 4: Unsupported}

_f32p = ctypes.c_void_p  # pointers pass as addresses: tensors give data_ptr()
_SIGNATURES = {
    "rv_last_error": (ctypes.c_char_p, []),
    "rv_api_version": (ctypes.c_int, []),
    "rv_built_with_cuda": (ctypes.c_int, []),
    "rv_library_info": (ctypes.c_char_p, []),
    "rv_fold_stacked": (ctypes.c_int, [_f32p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_size_t,
                                       ctypes.c_int, _f32p]),
    "rv_exact_reduce_stacked": (ctypes.c_int, [_f32p, ctypes.c_uint32, ctypes.c_size_t,
                                               ctypes.c_size_t, ctypes.c_int, _f32p]),
    "rv_digest_floats": (ctypes.c_int, [_f32p, ctypes.c_size_t, ctypes.c_char_p]),
    "rv_digest_values": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                        ctypes.c_char_p]),
    "rv_fold_stacked_dtype": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t,
                                             ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                             ctypes.c_void_p]),
    "rv_exact_reduce_stacked_dtype": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32,
                                                     ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                                                     ctypes.c_int, ctypes.c_void_p]),
    "rv_cuda_fold_stacked_dtype": (ctypes.c_int, [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32,
                                                  ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                                                  ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]),
    "rv_cuda_exact_reduce_stacked_dtype": (ctypes.c_int, [ctypes.c_int, ctypes.c_void_p,
                                                          ctypes.c_uint32, ctypes.c_size_t,
                                                          ctypes.c_size_t, ctypes.c_int,
                                                          ctypes.c_int, ctypes.c_void_p,
                                                          ctypes.c_void_p]),
    "rv_cuda_fold_stacked": (ctypes.c_int, [ctypes.c_int, _f32p, ctypes.c_uint32, ctypes.c_size_t,
                                            ctypes.c_size_t, ctypes.c_int, _f32p,
                                            ctypes.c_void_p]),
    "rv_cuda_exact_reduce_stacked": (ctypes.c_int, [ctypes.c_int, _f32p, ctypes.c_uint32,
                                                    ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                                                    _f32p, ctypes.c_void_p]),
}

_lock = threading.Lock()
_library = None


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
            for name, (restype, argtypes) in _SIGNATURES.items():
                try:
                    function = getattr(handle, name)
                except AttributeError as error:
                    raise LibraryNotFound(f"{path} lacks {name}: an older build?") from error
                function.restype = restype
                function.argtypes = argtypes
            version = handle.rv_api_version()
            if version != API_VERSION:
                raise LibraryNotFound(f"{path} speaks C API {version}; this package speaks "
                                      f"{API_VERSION}: rebuild and reinstall together")
            _library = handle
        return _library


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
