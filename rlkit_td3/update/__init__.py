"""The update's kernels: `fused_update` (the TD3 update without autograd, bit for bit the reference one),
`matmul_choice` (which library computes its matrix products) and `optim` (the optimizer steps both updates take).
"""
