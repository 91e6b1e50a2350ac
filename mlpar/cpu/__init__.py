"""Layer 1, one CPU: the parallelism inside one machine.

A Python loop, numpy broadcasting, SIMD, instruction-level parallelism and threads
(``elementwise``, ``reduction``); loops as matrix operations (``vectorized``); matrix multiply
and convolution (``matmul``, ``convolution``); memory bandwidth (``stream``), the hardware's spec peak
(``peak``) and the roofline; the GIL; Amdahl's and Gustafson's
laws; a spin lock for compiled code. Imports only from ``mlpar.core``.
"""
