"""The kernel catalog: reference kernels in the Python tile language (see README.md)."""
