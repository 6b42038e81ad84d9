"""Parquet data files written with a CRC32 in every page header (Parquet's page checksum), so damage
inside a page that leaves the file's size, magic and footer intact is found (tables.repair reads
every page back with verification). pyiceberg's Parquet writer takes no such option, so its Parquet
format model is replaced by one whose writer adds `write_page_checksum=True` (pyiceberg's registry of
file formats has no public way to replace an entry). Readers that do not check page checksums read
these files as any other."""
from __future__ import annotations

from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import ParquetFormatModel, ParquetFormatWriter
from pyiceberg.manifest import FileFormat


class _ChecksummedWriter(ParquetFormatWriter):
    def __init__(self, output_file, file_schema, properties) -> None:
        super().__init__(output_file, file_schema, properties)
        self._parquet_writer_kwargs["write_page_checksum"] = True


class _ChecksummedParquet(ParquetFormatModel):
    def create_writer(self, output_file, file_schema, properties):
        return _ChecksummedWriter(output_file, file_schema, properties)


def install() -> None:
    """From now on every Parquet data file this process writes through pyiceberg has page checksums."""
    if not isinstance(FileFormatFactory.get(FileFormat.PARQUET), _ChecksummedParquet):
        FileFormatFactory._registry[FileFormat.PARQUET] = _ChecksummedParquet()
