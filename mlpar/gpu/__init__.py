"""Layer 1, one GPU: CUDA's threads, blocks and grids, and kernels written in ``numba.cuda``.

``backend`` chooses a real GPU or numba's CUDA simulator (before numba is imported) and holds
the GPU arithmetic; ``cuda_kernels`` the kernels; ``plots`` the pictures. Imports only from
``mlpar.core`` and ``mlpar.cpu``.
"""
