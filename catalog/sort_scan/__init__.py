"""The sort and scan family of the kernel catalog."""
