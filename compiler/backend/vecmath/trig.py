"""stub"""
KERNELS = {}
