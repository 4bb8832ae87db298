"""The CPU host backend: LLVM objects, chunked in processes and joined."""
