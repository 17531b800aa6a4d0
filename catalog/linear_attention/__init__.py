"""The linear-attention (gated delta rule) family of the kernel catalog."""
