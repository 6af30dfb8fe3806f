// A backend that verifies evidence needs the document's data types too.
@_exported import LDS
