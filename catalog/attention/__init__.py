"""The attention family of the kernel catalog."""
