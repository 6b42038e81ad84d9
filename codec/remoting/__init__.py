"""codec/remoting"""
