"""Layer 2, the cluster: engines that run an algorithm's tasks, and what that costs.

``engines`` is the one interface (simulated, local processes, Dask); ``simulated_cluster`` the
virtual-clock simulator; ``peer_network`` a simulated network of peers with duplex links;
``dask_cluster`` starts or joins a Dask cluster; ``cost_model`` the α–β cost of computation,
messages and stragglers, with ``collectives`` (flat, tree and ring reduce); ``tasks`` the
functions that run on a worker. Real engines refuse more workers than ``mlpar.core.limits``
allows, before starting any.
Imports only from the layers below.
"""
