import Foundation
import GuestPassCrypto
import GuestPassStore

/// Transfer and recovery codes: random, from an alphabet without look-alikes (no 0/O, 1/I/L), grouped for reading
/// aloud, and known to the database only by the SHA-256 of their normalised form (upper case, letters and digits only),
/// so that "abcde fghjk" and "ABCDE-FGHJK" are the same code.
enum AccountCode {
    static let alphabet = Array("23456789ABCDEFGHJKMNPQRSTUVWXYZ")

    /// The two kinds of code (the store's `AccountCodeKind`, the value the SQL functions take).
    typealias Kind = AccountCodeKind

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

extension AccountCodeKind {
    /// Characters in a code: 10 for transfer (about 50 bits), 20 for recovery (about 99 bits).
    var length: Int { self == .transfer ? 10 : 20 }
    /// Characters between dashes, for reading aloud.
    var groupSize: Int { self == .transfer ? 5 : 4 }
}
