#!/usr/bin/env python3
"""Why an OpenCL driver shows no platform: loads one ICD library directly (no loader in between)
and asks it for its platforms, printing the dlopen error or the OpenCL error code.

Usage: python3 scripts/opencl_probe.py /path/to/libvendor-opencl.so.1
"""
import ctypes
import sys

path = sys.argv[1]
try:
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
except OSError as e:
    print(f"dlopen {path}: {e}")
    sys.exit(1)
n = ctypes.c_uint(0)
proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint))
try:
    gefa = lib.clGetExtensionFunctionAddress
    gefa.restype = ctypes.c_void_p
    gefa.argtypes = [ctypes.c_char_p]
    addr = gefa(b"clIcdGetPlatformIDsKHR")
    if addr:
        rc = proto(addr)(0, None, ctypes.byref(n))
        print(f"clIcdGetPlatformIDsKHR (by clGetExtensionFunctionAddress): status {rc}, {n.value} platform(s)")
    else:
        print("clGetExtensionFunctionAddress: no clIcdGetPlatformIDsKHR")
except AttributeError:
    print("clGetExtensionFunctionAddress: not exported")
for name in ("clIcdGetPlatformIDsKHR", "clGetPlatformIDs"):
    try:
        fn = getattr(lib, name)
    except AttributeError:
        print(f"{name}: not exported")
        continue
    fn.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint)]
    rc = fn(0, None, ctypes.byref(n))
    print(f"{name}: status {rc}, {n.value} platform(s)")
