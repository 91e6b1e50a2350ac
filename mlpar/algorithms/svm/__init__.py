"""Support vector machines: kernel matrices, Pegasos, SMO, tuning C and γ, the cascade (09)."""
