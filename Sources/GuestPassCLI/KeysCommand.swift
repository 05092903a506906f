import ArgumentParser
import Foundation
import GuestPassCrypto
import GuestPassDevStack

/// `guestpass keys generate`: a new ES256 signing key as a PKCS#8 PEM file (mode 0600).
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage JWT signing keys.", subcommands: [Generate.self, Public.self]
    )

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write a new ES256 private key (PKCS#8 PEM) and print its kid.")
        @Option(help: "Where to write the key; refuses to overwrite.") var out: String

        func run() async throws {
            guard !FileManager.default.fileExists(atPath: self.out) else {
                throw ValidationError("\(self.out) already exists; not overwriting a key")
            }
            let key = try ES256PrivateKey.generate()
            let pem = try key.pkcs8PEMRepresentation
            do {
                try DevStack.writePrivately(Data(pem.utf8), to: self.out)
            } catch let error as DevStackError {
                throw ValidationError(error.description)
            }
            print("kid: \(key.publicKey.thumbprint)")
        }
    }

    struct Public: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the public key (PEM) of a private key file, for GUESTPASS_JWT_VERIFY_KEY_FILES.")
        @Argument(help: "The private key file.") var file: String

        func run() async throws {
            let key = try ES256PrivateKey(pemRepresentation: try String(contentsOfFile: self.file, encoding: .utf8))
            print(try key.publicKey.pemRepresentation, terminator: "")
        }
    }
}
