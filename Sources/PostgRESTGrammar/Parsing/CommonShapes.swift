/// The shapes nearly every table request's parameters take — `select=*`, `select=a,b`, `col=op.value`,
/// `col=in.(a,b)`, `col=is.null`, `order=a.desc.nullslast,b`, `limit=10` — read by one scan of their UTF-8 bytes,
/// without the combinator engine (which allocates closures and replies at every step: about a quarter of a table
/// read's server CPU went to parsing four short parameters).
///
/// Each function answers exactly what the grammar (`Grammars` in `QueryGrammar`) answers for every text it accepts,
/// and nil for every other text — errors included — which the caller then hands to the grammar: PostgREST's error
/// texts and positions have one home. Names here are only `[A-Za-z0-9_$]+` (no quotes, dashes, spaces or JSON paths);
/// anything else is left to the grammar. `CommonShapesTests` checks the equality on generated and random texts.
enum CommonShapes {
    /// A filter key (`pTreePath`) that is one plain name: no embedding path, no JSON path.
    static func treePath(_ key: String) -> (path: [String], field: FieldPath)? {
        Self.isPlainName(key.utf8[...]) ? ([], FieldPath(column: key)) : nil
    }

    /// The embedding path of a modifier key (`limit`, `order`): the root's when the key is one plain name.
    static func embeddingPath(ofKey key: String) -> [String]? { Self.isPlainName(key.utf8[...]) ? [] : nil }

    /// `columns=` / `on_conflict=`: plain names separated by single commas.
    static func columns(_ text: String) -> [String]? {
        var names: [String] = []
        for piece in text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            guard Self.isPlainName(piece) else { return nil }
            names.append(String(decoding: piece, as: UTF8.self))
        }
        return names
    }

    /// `select=`: `*` and plain names separated by single commas (no alias, cast, aggregate or embedding).
    static func select(_ text: String) -> [SelectItem]? {
        var items: [SelectItem] = []
        for piece in text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            if piece.count == 1, piece.first == UInt8(ascii: "*") {
                items.append(.star)
            } else if Self.isPlainName(piece) {
                items.append(.field(SelectField(field: FieldPath(column: String(decoding: piece, as: UTF8.self)))))
            } else {
                return nil
            }
        }
        return items
    }

    /// A top-level filter's value: `[not.]op.value` for the operators without a quantifier, configuration or list,
    /// `[not.]in.(a,b)` with items that need no quoting, and `[not.]is.<keyword>` (nothing after the keyword).
    static func condition(_ text: String) -> Condition? {
        var rest = text.utf8[...]
        let negated = Self.dropPrefix("not.", from: &rest)
        guard let dot = rest.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let opText = rest[..<dot]
        let value = rest[rest.index(after: dot)...]
        if Self.equals(opText, "in") {
            guard let items = Self.listItems(value) else { return nil }
            return Condition(negated: negated, op: .in, value: .list(items == [""] ? [] : items))
        }
        if Self.equals(opText, "is") {
            guard let keyword = Self.isKeyword(value) else { return nil }
            return Condition(negated: negated != keyword.negated, op: .is, value: .keyword(keyword.value))
        }
        guard let op = Self.singleValueOperator(opText) else { return nil }
        return Condition(negated: negated, op: op, value: .text(String(Substring(value))))
    }

    /// `order=`: terms `name[.asc|.desc][.nullsfirst|.nullslast]` separated by single commas.
    static func order(_ text: String) -> [OrderTerm]? {
        var terms: [OrderTerm] = []
        for piece in text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var words = piece.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)[...]
            guard let name = words.popFirst(), Self.isPlainName(name) else { return nil }
            var term = OrderTerm(field: FieldPath(column: String(decoding: name, as: UTF8.self)))
            if let word = words.first, Self.equals(word, "asc") || Self.equals(word, "desc") {
                term.direction = Self.equals(word, "asc") ? .asc : .desc
                words.removeFirst()
            }
            if let word = words.first, Self.equals(word, "nullsfirst") || Self.equals(word, "nullslast") {
                term.nulls = Self.equals(word, "nullsfirst") ? .first : .last
                words.removeFirst()
            }
            guard words.isEmpty else { return nil }
            terms.append(term)
        }
        return terms
    }

    /// `limit=` / `offset=`: an optional `-` and 1 to 18 ASCII digits (so that it fits in `Int`), nothing else.
    static func integer(_ text: String) -> Int? {
        var digits = text.utf8[...]
        _ = Self.dropPrefix("-", from: &digits)
        guard (1...18).contains(digits.count), digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return Int(text)
    }

    // MARK: Pieces

    /// `[A-Za-z0-9_$]+`: read by `pFieldName` as itself.
    static func isPlainName(_ bytes: Substring.UTF8View) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(Self.isNameByte)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "$"):
            return true
        default:
            return false
        }
    }

    /// The operators `pOpExpr` reads as `op.value` with the rest of the text as the value.
    private static func singleValueOperator(_ bytes: Substring.UTF8View) -> FilterOperator? {
        guard let op = FilterOperator(rawValue: String(Substring(bytes))) else { return nil }
        switch op {
        case .eq, .neq, .gt, .gte, .lt, .lte, .like, .ilike, .match, .imatch, .isdistinct, .cs, .cd, .ov, .sl, .sr, .nxl, .nxr, .adj:
            return op
        case .is, .in, .fts, .plfts, .phfts, .wfts:
            return nil
        }
    }

    /// `(a,b,…)` ending the text, with items free of `"`, `,`, `)`, spaces and tabs (so none is quoted or trimmed).
    private static func listItems(_ bytes: Substring.UTF8View) -> [String]? {
        guard bytes.first == UInt8(ascii: "("), bytes.last == UInt8(ascii: ")"), bytes.count >= 2 else { return nil }
        let inside = bytes.dropFirst().dropLast()
        var items: [String] = []
        for item in inside.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            guard !item.contains(where: { [UInt8(ascii: "\""), UInt8(ascii: ")"), UInt8(ascii: " "), UInt8(ascii: "\t")].contains($0) }) else {
                return nil
            }
            items.append(String(decoding: item, as: UTF8.self))
        }
        return items
    }

    /// `is.` keywords, any letter in either case, as the whole rest of the text; `not_null` is `not.is.null`. ASCII
    /// only: `lowercased()` maps a few other letters onto ASCII ones (the Kelvin sign onto `k`), the grammar does not.
    private static func isKeyword(_ bytes: Substring.UTF8View) -> (negated: Bool, value: IsValue)? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        switch String(Substring(bytes)).lowercased() {
        case "null": return (false, .null)
        case "not_null": return (true, .null)
        case "true": return (false, .true)
        case "false": return (false, .false)
        case "unknown": return (false, .unknown)
        default: return nil
        }
    }

    private static func equals(_ bytes: Substring.UTF8View, _ word: StaticString) -> Bool {
        word.withUTF8Buffer { bytes.elementsEqual($0) }
    }

    private static func dropPrefix(_ prefix: StaticString, from bytes: inout Substring.UTF8View) -> Bool {
        prefix.withUTF8Buffer { prefixBytes in
            guard bytes.starts(with: prefixBytes) else { return false }
            bytes = bytes.dropFirst(prefixBytes.count)
            return true
        }
    }
}
