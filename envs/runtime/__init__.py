"""envs/runtime"""
