import PostgRESTGrammar

/// The relationship an embedding follows: a foreign key between the parent and the target, seen from the parent.
struct Relationship {
    enum Cardinality {
        /// The parent holds the foreign key: one target row or none (an object or `null`).
        case manyToOne
        /// The target holds the foreign key: an array of target rows.
        case oneToMany
        /// The target holds the foreign key on a unique key: one row or none (an object or `null`).
        case oneToOne
    }

    let foreignKey: ForeignKey
    let target: Relation
    let cardinality: Cardinality
    /// The join: pairs of (target column, parent column) that must be equal.
    let joins: [(target: String, parent: String)]

    var isToOne: Bool { self.cardinality != .oneToMany }
}

extension RelationCatalog {
    /// The one relationship between `parent` and the embedding `name` (a table of the parent's schema, a foreign key's
    /// name, or a single foreign-key column), narrowed by `hint` (`rel!hint`: a foreign key's name or one of its
    /// columns). None is 400 `PGRST200`; several are 300 `PGRST201` with the hints that would choose each.
    func relationship(from parent: Relation, to name: String, hint: String?) throws -> Relationship {
        var candidates: [Relationship] = []
        for key in self.foreignKeys {
            let matchesHint = { (hint: String?) in
                guard let hint else { return true }
                return key.name == hint || key.columns == [hint] || key.referencedColumns == [hint]
            }
            if key.schema == parent.schema, key.table == parent.name,
                let target = self.relation(schema: key.referencedSchema, name: key.referencedTable),
                target.name == name || key.name == name || key.columns == [name], matchesHint(hint)
            {
                candidates.append(
                    Relationship(
                        foreignKey: key, target: target, cardinality: .manyToOne,
                        joins: Array(zip(key.referencedColumns, key.columns)).map { (target: $0.0, parent: $0.1) }))
            }
            if key.referencedSchema == parent.schema, key.referencedTable == parent.name,
                let target = self.relation(schema: key.schema, name: key.table), target.name == name || key.name == name, matchesHint(hint)
            {
                let unique = target.uniqueKeys.contains(Set(key.columns))
                candidates.append(
                    Relationship(
                        foreignKey: key, target: target, cardinality: unique ? .oneToOne : .oneToMany,
                        joins: Array(zip(key.columns, key.referencedColumns)).map { (target: $0.0, parent: $0.1) }))
            }
        }
        if candidates.count == 1 { return candidates[0] }
        if candidates.isEmpty {
            throw PostgRESTRefusal(
                .badRequest, code: PostgRESTCode.noRelationship,
                message: "Could not find a relationship between '\(parent.name)' and '\(name)' in the schema cache",
                hint: "Embeddings follow foreign keys between tables of the exposed schemas"
            )
        }
        let choices = candidates.map { "'\(name)!\($0.foreignKey.name)'" }.joined(separator: ", ")
        let details = candidates.map { candidate in
            "\(candidate.cardinality) via \(candidate.foreignKey.name) (\(candidate.foreignKey.table)(\(candidate.foreignKey.columns.joined(separator: ", "))) → \(candidate.foreignKey.referencedTable)(\(candidate.foreignKey.referencedColumns.joined(separator: ", "))))"
        }.joined(separator: "; ")
        throw PostgRESTRefusal(
            .multipleChoices, code: PostgRESTCode.ambiguousRelationship,
            message: "Could not embed because more than one relationship was found for '\(parent.name)' and '\(name)'",
            details: details,
            hint: "Try changing '\(name)' to one of the following: \(choices). Find the desired relationship in the 'details' key."
        )
    }
}
