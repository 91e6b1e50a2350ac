"""Layer 1, one GPU: CUDA's threads, blocks and grids, and kernels written in ``numba.cuda``.

``backend`` chooses a real GPU or numba's CUDA simulator (before numba is imported) and holds
the GPU arithmetic (launches, occupancy, tile shapes, break-even); ``stack`` checks that the
installed numba / numba-cuda / numpy can run kernels; ``cuda_kernels`` the first kernels;
``matmul`` the faster matmul steps; ``transfers`` the host–device link (copies timed apart,
pinned memory, streams); ``plots`` the pictures. Imports only from ``mlpar.core`` and
``mlpar.cpu``.
"""
