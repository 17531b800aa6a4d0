"""The matmul family of the kernel catalog: plain, transposed, split, fp8, fused epilogues and
prologues, and the dequantising matmul."""
