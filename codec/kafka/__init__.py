"""codec/kafka"""
