"""codec"""
