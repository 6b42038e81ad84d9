"""A cluster of gateways coordinated by etcd (docs/cluster.md): the etcd client and the cluster model."""
