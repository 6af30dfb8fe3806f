import BoundedFiles
import CVCertificates

/// How `terminal print` and `terminal check` put CV certificates and requests into words and JSON.
package enum TerminalPrint {
    package static func kind(_ authorization: CertificateHolderAuthorization) -> String {
        let type: String
        switch authorization.terminalType {
        case CertificateHolderAuthorization.inspectionSystem: type = "Inspection System"
        case CertificateHolderAuthorization.authenticationTerminal: type = "Authentication Terminal"
        case CertificateHolderAuthorization.signatureTerminal: type = "Signature Terminal"
        default: type = authorization.terminalType
        }
        switch authorization.role {
        case .cvca: return "CVCA (\(type))"
        case .dvDomestic: return "domestic DV (\(type))"
        case .dvForeign: return "foreign DV (\(type))"
        case .terminal: return type
        }
    }

    package static func keyDescription(_ key: CVPublicKey) -> String {
        if key.algorithm.isRSA { return "\(key.algorithm.schemeName), RSA \((key.modulus?.count ?? 0) * 8) bits" }
        let curve = key.domainParameters == nil ? (key.standardCurve.map { "\($0.name), parameters from the CVCA" } ?? "parameters from the CVCA")
                                                : (key.standardCurve.map { "\($0.name), explicit parameters" } ?? "explicit parameters")
        return "\(key.algorithm.schemeName), \(curve)"
    }

    package static func json(_ certificate: CVCertificate) -> [String: Any] {
        let authorization = certificate.authorization
        return ["type": "certificate", "car": certificate.authorityReference, "chr": certificate.holderReference,
                "role": authorization.role.rawValue, "terminalType": authorization.terminalType,
                "rights": authorization.biometricDataGroups,
                "effective": "\(certificate.effectiveDate)", "expiration": "\(certificate.expirationDate)",
                "algorithm": certificate.publicKey.algorithm.schemeName, "key": keyDescription(certificate.publicKey),
                "extensions": certificate.extensions.count]
    }

    package static func json(_ request: CVCertificateRequest) -> [String: Any] {
        var object: [String: Any] = ["type": "request", "chr": request.holderReference, "algorithm": request.publicKey.algorithm.schemeName,
                                     "key": keyDescription(request.publicKey)]
        if let car = request.authorityReference { object["car"] = car }
        object["innerSignature"] = (try? request.verifyInnerSignature()) != nil ? "valid" : "invalid"
        if let outer = request.outerAuthorityReference { object["authenticatedBy"] = outer }
        return object
    }

    package static func text(_ certificate: CVCertificate, file: String) -> String {
        let authorization = certificate.authorization
        let rights = authorization.biometricDataGroups
        return """
            \(file): CV certificate
              CHR \(certificate.holderReference), issued by CAR \(certificate.authorityReference)\(certificate.isSelfSigned ? " (self-signed)" : "")
              \(kind(authorization)); rights: \(rights.isEmpty ? "none" : rights.joined(separator: ", "))
              valid \(certificate.effectiveDate) … \(certificate.expirationDate)
              key: \(keyDescription(certificate.publicKey))
            """
    }

    package static func text(_ request: CVCertificateRequest, file: String) -> String {
        let inner = (try? request.verifyInnerSignature()) != nil ? "valid" : "INVALID"
        return """
            \(file): CV certificate request
              CHR \(request.holderReference)\(request.authorityReference.map { ", for CAR \($0)" } ?? "")
              key: \(keyDescription(request.publicKey)); inner signature \(inner)
            """ + (request.outerAuthorityReference.map { "\n  authenticated by \($0) (outer signature)" } ?? "")
    }

    /// A CV certificate or request file in words and as JSON (`terminal print`); a file that is
    /// neither gets `error` naming the field that is wrong, as a certificate when it looks like one.
    package static func describe(file: String) -> (json: [String: Any], text: String, error: String?) {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(file, ceiling: BoundedFile.Ceiling.cvCertificate, what: "CV certificate or request")
        } catch {
            return (["file": file, "error": error.description], "", error.description)
        }
        let asCertificate: CVCertificateError
        do {
            let certificate = try CVCertificate(bytes: bytes)
            return (json(certificate).merging(["file": file]) { $1 }, text(certificate, file: file), nil)
        } catch {
            asCertificate = error
        }
        do {
            let request = try CVCertificateRequest(bytes: bytes)
            return (json(request).merging(["file": file]) { $1 }, text(request, file: file), nil)
        } catch {
            let reason = bytes.first == 0x7F || bytes.first != 0x67 ? asCertificate : error
            return (["file": file, "error": ["code": reason.code.rawValue, "field": reason.field, "message": reason.reason]], "",
                    "\(file): \(reason.field): \(reason.reason)")
        }
    }
}
