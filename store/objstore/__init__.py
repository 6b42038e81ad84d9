"""Object storage behind one small adapter (docs/tiered-storage.md): the contract in `api`, the S3
implementation in `s3`. Shared by the tier and by diskless topics."""
