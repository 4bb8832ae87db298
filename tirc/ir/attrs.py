"""Attribute keys and calling conventions: every key a pass or backend reads or writes,
named once (TVM spells them ``tir::attr::kTarget``, ``CallingConv::kDeviceKernelLaunch``).

Function attributes are ``T.func_attr({...})`` entries; statement attributes are the keys
of ``T.attr(node, key, value)`` scopes. The values are the spellings TVM 0.27 prints
(``tirx.*``); ``tir.*`` spellings of older releases are read where TVM still reads them.
"""
from __future__ import annotations

from enum import IntEnum


class CallingConv(IntEnum):
    """A function's ``"calling_conv"`` (TVM's ``CallingConv``). The IR holds the plain int,
    as the text does (``int(CallingConv.CPACKED_FUNC)``); members compare equal to it."""

    DEFAULT = 0  # a plain function of its target
    CPACKED_FUNC = 1  # a tvm-ffi packed function (MakePackedAPI)
    DEVICE_KERNEL_LAUNCH = 2  # a kernel the host launches (SplitHostDevice)


def is_kernel(func) -> bool:
    """Whether a function is a kernel the host launches (SplitHostDevice made it one)."""
    return func.attrs.get(CALLING_CONV, 0) == CallingConv.DEVICE_KERNEL_LAUNCH


def sized_launch_params(tags) -> tuple[str, ...]:
    """The launch parameters that take a size (a launch passes one for each, in order):
    all but the LAUNCH_FLAGS."""
    return tuple(t for t in tags if t not in LAUNCH_FLAGS)


# -- function attributes -----------------------------------------------------------------
TARGET = "target"  # also the key of a T.attr(<target>, "target", 0) region
CALLING_CONV = "calling_conv"
GLOBAL_SYMBOL = "global_symbol"
NOALIAS = "tirx.noalias"  # buffer arguments do not alias
NOALIAS_KEYS = ("tir.noalias", NOALIAS)  # the older spelling too
IS_HOST_FUNC = "tir.is_host_func"  # BindTarget: bind the host, not the device target
IS_GLOBAL_FUNC = "tirx.is_global_func"  # a kernel: callable from the host
KERNEL_LAUNCH_PARAMS = "tirx.kernel_launch_params"  # the launch's thread tags, in order
USE_DYN_SHARED_MEMORY = "tirx.use_dyn_shared_memory"
# Launch parameters that ask for a kind of launch and take no size (TVM's spellings,
# "programtic" included); requested in a function's KERNEL_LAUNCH_PARAMS
USE_PDL = "tirx.use_programtic_dependent_launch"  # programmatic dependent launch
USE_COOPERATIVE_LAUNCH = "tirx.use_cooperative_launch"
LAUNCH_FLAGS = (USE_PDL, USE_COOPERATIVE_LAUNCH)
C_API = "tirc.c_api"  # exported with a C signature (MakeCAPI)
SYMBOL_PREFIX = "tirc.symbol_prefix"  # --symbol-prefix, on every exported function

# -- statement attributes (T.attr keys) ---------------------------------------------------
THREAD_EXTENT = "thread_extent"
VIRTUAL_THREAD = "virtual_thread"
DEVICE_SCOPE = "device_scope"  # T.attr(0, "device_scope", 0): a region run on the device
REDUCE_SCOPE = "reduce_scope"
DEVICE_TYPE = "device_type"
DEVICE_ID = "device_id"
VOLATILE = "tirx.volatile"  # an allocation's annotation: every access is volatile
# a block's annotation while its regions are not yet known (bit 1: T.reads, bit 2: T.writes
# left out of the text); InferBlockRegions fills them in and drops it, as TVM's parser does
DETECT_ACCESS = "tirx.script_parsing_detect_access"
PRAGMA_AUTO_UNROLL_MAX_STEP = "pragma_auto_unroll_max_step"
PRAGMA_UNROLL_EXPLICIT = "pragma_unroll_explicit"
PRAGMA_LOOP_PARTITION_HINT = "pragma_loop_partition_hint"
PRAGMA_DEBUG_SKIP_REGION = "pragma_debug_skip_region"

# -- call options (keyword arguments of intrinsic calls) ----------------------------------
CPACKED_TENSORS = "tensors"  # T.call_cpacked: the argument positions passed as DLTensor*
