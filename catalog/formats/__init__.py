"""The value-format family of the kernel catalog (HiF8 and fp8 rounding, packed codes, unaligned widths)."""
