import Foundation
import GuestPassCrypto
import GuestPassPostgres

/// Transfer and recovery codes: random, from an alphabet without look-alikes (no 0/O, 1/I/L), grouped for reading
/// aloud, and known to the database only by the SHA-256 of their normalised form (upper case, letters and digits only),
/// so that "abcde fghjk" and "ABCDE-FGHJK" are the same code.
enum AccountCode {
    static let alphabet = Array("23456789ABCDEFGHJKMNPQRSTUVWXYZ")

    enum Kind: String {
        /// 10 characters (about 50 bits), one-time, minutes long: moving to a new phone.
        case transfer
        /// 20 characters (about 99 bits), one-time, no expiry: written down for a lost phone.
        case recovery

        var length: Int { self == .transfer ? 10 : 20 }
        var groupSize: Int { self == .transfer ? 5 : 4 }
    }

    /// A new code of `kind`, grouped with dashes (`ABCDE-FGHJK`).
    static func generate(_ kind: Kind) throws -> String {
        var characters: [Character] = []
        let limit = 256 - 256 % alphabet.count
        while characters.count < kind.length {
            for byte in try SecureRandom.bytes(32) where Int(byte) < limit && characters.count < kind.length {
                characters.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return stride(from: 0, to: characters.count, by: kind.groupSize)
            .map { String(characters[$0..<min($0 + kind.groupSize, characters.count)]) }
            .joined(separator: "-")
    }

    /// The lowercase hex SHA-256 of the normalised `code` (letters and digits, upper case), or nil when it has no
    /// letters or digits or is absurdly long.
    static func hash(_ code: String) -> String? {
        guard code.utf8.count <= 200 else { return nil }
        let normalised = String(code.uppercased().filter { $0.isASCII && ($0.isLetter || $0.isNumber) })
        return normalised.isEmpty ? nil : Digest.sha256Hex(normalised)
    }
}
