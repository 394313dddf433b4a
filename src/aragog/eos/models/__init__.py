"""Equation-of-state models from published parameters: each phase a Helmholtz free energy
F(V, T) in JAX, every property by automatic differentiation (:mod:`.thermo`)."""
