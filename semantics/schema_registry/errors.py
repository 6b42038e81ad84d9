"""The registry's refusals, each with Confluent's HTTP status, error code and message."""
from __future__ import annotations


class RegistryError(Exception):
    """A refused registry operation: `status` (HTTP), `code` (Confluent's error_code), `message`."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(what="") -> RegistryError:
    return RegistryError(404, 40403, f"Schema {what} not found" if what != "" else "Schema not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true "
                         "to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted first before being "
                         "permanently deleted")


def compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(messages: list[str]) -> RegistryError:
    return RegistryError(409, 409, "Schema being registered is incompatible with an earlier schema for subject; "
                         + "; ".join(messages[:10]))


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def invalid_version(version) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed "
                         "values are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility(level) -> RegistryError:
    return RegistryError(422, 42203, f"Invalid compatibility level. Valid values are none, backward, forward, full, "
                         f"backward_transitive, forward_transitive, and full_transitive (got {level!r})")


def invalid_mode(mode) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode. Valid values are READWRITE, READONLY and IMPORT (got {mode!r})")


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def reference_exists(subject: str, version: int, ids) -> RegistryError:
    return RegistryError(422, 42206, f"One or more references exist to the schema {{subject={subject}, "
                         f"version={version}}}: schema ids {sorted(ids)}")


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error in the backend data store - {message}")
