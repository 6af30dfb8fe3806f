// `import MRTD` keeps giving what it always gave: the document's data and its verification.
@_exported import LDS
@_exported import MRTDVerification
