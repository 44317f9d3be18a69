"""numba kernels: numpy arrays in, numpy arrays out, no spaCy."""

from .compile_notice import install as _install_compile_notice

_install_compile_notice()
