"""Layer 3, the algorithms, one subpackage per family.

``training``: ``TrainingResult``, what every trainer returns (loss against time, ``.plot()``).
``model_selection``: parallel cross-validation and hyperparameter search (lesson 03).
``sgd``: parallel SGD with and without locks, Hogwild, and its conflict simulation (lesson 04).
``distributed``: training across workers: MapReduce, parameter server, gossip (05, 06, 07).
``pipeline``: batch, domain, model and pipeline parallelism (lesson 08).
``svm``: kernel SVMs: kernel matrices, Pegasos, SMO, C–γ tuning, the cascade (lesson 09).
Imports only from the layers below (and within the family).
"""
