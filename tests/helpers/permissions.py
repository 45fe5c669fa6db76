"""File permissions as any user meets them, also when the tests run as root."""

from __future__ import annotations

import ctypes
import os
from contextlib import contextmanager

import pytest


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


#: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: root's way past file permissions
_DAC = (1 << 1) | (1 << 2)


@contextmanager
def permissions_apply():
    """Within it, this thread meets file permissions as any user does: under root, its override
    of them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) is lowered from the thread's effective
    capabilities, and raised again after (Linux keeps capabilities per thread)."""
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    head, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(head), data) != 0:
        pytest.skip("running as root, and its capabilities cannot be read to lower its file-permission override")
    before = data[0].effective
    data[0].effective = before & ~_DAC
    if libc.capset(ctypes.byref(head), data) != 0:
        pytest.skip("running as root, and its file-permission override cannot be lowered")
    try:
        yield
    finally:
        data[0].effective = before
        assert libc.capset(ctypes.byref(head), data) == 0
