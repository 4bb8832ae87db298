"""OpenCL devices: OpenCL C source, and its launch through the OpenCL API."""
