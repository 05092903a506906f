import PostgRESTGrammar

/// The relationship an embedding follows, seen from the parent: a foreign key between the parent and the target, two
/// foreign keys of a junction table (many-to-many), or a function of the parent's row (a computed relationship).
struct Relationship {
    enum Cardinality {
        /// The parent holds the foreign key: one target row or none (an object or `null`).
        case manyToOne
        /// The target holds the foreign key: an array of target rows.
        case oneToMany
        /// The target holds the foreign key on a unique key: one row or none (an object or `null`).
        case oneToOne
        /// A junction table holds a foreign key to each, both within its primary key: an array of target rows.
        case manyToMany
    }

    /// A junction table and how its columns meet the target's and the parent's.
    struct Junction {
        let relation: Relation
        let toTarget: [(junction: String, target: String)]
        let toParent: [(junction: String, parent: String)]
    }

    /// How a target row is tied to the parent row.
    enum Link {
        /// Pairs of (target column, parent column) that must be equal.
        case columns([(target: String, parent: String)])
        /// Through a junction table.
        case junction(Junction)
        /// The rows of `schema.name(parent_row)`.
        case function(schema: String, name: String)
    }

    /// The foreign key followed (for many-to-many, the junction's key to the target; nil for a computed relationship).
    let foreignKey: ForeignKey?
    let target: Relation
    let cardinality: Cardinality
    let link: Link

    var isToOne: Bool { self.cardinality == .manyToOne || self.cardinality == .oneToOne }

    /// From the table holding `key` to the row it references (`target`): many-to-one.
    static func toReferenced(by key: ForeignKey, target: Relation) -> Relationship {
        Relationship(
            foreignKey: key, target: target, cardinality: .manyToOne,
            link: .columns(zip(key.referencedColumns, key.columns).map { (target: $0.0, parent: $0.1) }))
    }

    /// From the referenced table to the rows of `target` holding `key`: one-to-many, or one-to-one on a unique key.
    static func toReferencing(by key: ForeignKey, target: Relation) -> Relationship {
        Relationship(
            foreignKey: key, target: target, cardinality: key.oneToOne ? .oneToOne : .oneToMany,
            link: .columns(zip(key.columns, key.referencedColumns).map { (target: $0.0, parent: $0.1) }))
    }

    /// The junction table, for a many-to-many relationship.
    var junction: Junction? {
        guard case .junction(let junction) = self.link else { return nil }
        return junction
    }

    /// Where target rows (aliased `alias`) tied to the parent row (`parent` aliased `parentTable`) come from: `FROM`
    /// the target with the WHERE conditions of a foreign key; or with an inner join to the junction (under a fresh
    /// alias, so that a spread's lateral joins after it still see the target); or `FROM` the computed relationship's
    /// function of the parent's row.
    func source(target alias: String, parent: Relation, parentTable: String, sql: inout TableSQL) -> (from: String, conditions: [String]) {
        let target = "FROM \(TableSQL.qualified(self.target)) AS \(alias)"
        switch self.link {
        case .columns(let pairs):
            return (target, pairs.map { "\(alias).\(TableSQL.quoted($0.target)) = \(parentTable).\(TableSQL.quoted($0.parent))" })
        case .junction(let junction):
            let junctionAlias = sql.alias(for: junction.relation.name)
            let on = junction.toTarget.map { "\(junctionAlias).\(TableSQL.quoted($0.junction)) = \(alias).\(TableSQL.quoted($0.target))" }
            let conditions = junction.toParent.map {
                "\(junctionAlias).\(TableSQL.quoted($0.junction)) = \(parentTable).\(TableSQL.quoted($0.parent))"
            }
            return (target + " JOIN \(TableSQL.qualified(junction.relation)) AS \(junctionAlias) ON \(on.joined(separator: " AND "))", conditions)
        case .function(let schema, let name):
            let call = "\(TableSQL.quoted(schema)).\(TableSQL.quoted(name))(\(TableSQL.row(of: parent, on: parentTable)))"
            return ("FROM \(call) AS \(alias)", [])
        }
    }
}

extension RelationCatalog {
    /// The one relationship between `parent` and the embedding `name` (a table of the parent's schema, a foreign key's
    /// name, or a single foreign-key column), narrowed by `hint` (`rel!hint`: a foreign key's name or one of its
    /// columns). None is 400 `PGRST200`; several are 300 `PGRST201` with the hints that would choose each.
    func relationship(from parent: Relation, to name: String, hint: String?) throws -> Relationship {
        // A computed relationship of that name wins over the foreign keys, as in PostgREST.
        if hint == nil, let computed = self.computed(from: parent, named: name) { return computed }
        var candidates: [Relationship] = []
        for key in self.foreignKeys {
            let matchesHint = { (hint: String?) in
                guard let hint else { return true }
                return key.name == hint || key.columns == [hint] || key.referencedColumns == [hint]
            }
            if key.isSelfReference {
                if key.schema == parent.schema, key.table == parent.name { candidates += self.selfRelationships(parent, key, name: name, hint: hint) }
                continue
            }
            if key.schema == parent.schema, key.table == parent.name,
                let target = self.relation(schema: key.referencedSchema, name: key.referencedTable),
                target.name == name || key.name == name || key.columns == [name], matchesHint(hint)
            {
                candidates.append(.toReferenced(by: key, target: target))
            }
            if key.referencedSchema == parent.schema, key.referencedTable == parent.name,
                let target = self.relation(schema: key.schema, name: key.table),
                target.name == name || key.name == name || key.referencedColumns == [name], matchesHint(hint)
            {
                candidates.append(.toReferencing(by: key, target: target))
            }
        }
        candidates += self.manyToMany(from: parent, to: name, junctionHint: hint)
        if candidates.count == 1 { return candidates[0] }
        if candidates.isEmpty { throw self.noRelationship(from: parent, to: name, hint: hint) }
        // Every candidate here follows a foreign key (a computed relationship was returned above).
        let choices = candidates.map { "'\(name)!\($0.junction?.relation.name ?? $0.foreignKey?.name ?? "")'" }.joined(separator: ", ")
        let details = candidates.compactMap { candidate -> String? in
            guard let key = candidate.foreignKey else { return nil }
            let via = candidate.junction.map { " through \($0.relation.name)" } ?? ""
            return
                "\(candidate.cardinality) via \(key.name) (\(key.table)(\(key.columns.joined(separator: ", "))) → \(key.referencedTable)(\(key.referencedColumns.joined(separator: ", "))))\(via)"
        }.joined(separator: "; ")
        throw PostgRESTRefusal(
            .multipleChoices, code: PostgRESTCode.ambiguousRelationship,
            message: "Could not embed because more than one relationship was found for '\(parent.name)' and '\(name)'",
            details: details,
            hint: "Try changing '\(name)' to one of the following: \(choices). Find the desired relationship in the 'details' key."
        )
    }

    /// The relationships a self-referencing foreign key gives `parent` (a table whose key references the table itself,
    /// `web_content.p_web_id → web_content.id`): one key, two directions, told apart as PostgREST does (`findRel`):
    /// the table's own name is the children (to-many: the rows whose key holds this row's id, `web_content(name)`),
    /// the key's single column the parent (to-one, `parent:p_web_id(name)`); with a hint, the table's name and the key's
    /// single column as hint name the children (`auditees:organizations!auditor(*)`). The key's name chooses neither.
    private func selfRelationships(_ parent: Relation, _ key: ForeignKey, name: String, hint: String?) -> [Relationship] {
        var found: [Relationship] = []
        if hint == nil, key.columns == [name] { found.append(.toReferenced(by: key, target: parent)) }
        if parent.name == name, hint == nil || key.columns == [hint] { found.append(.toReferencing(by: key, target: parent)) }
        return found
    }

    /// The computed relationship `name` of `parent`: a function of the exposed schemas taking `parent`'s row.
    private func computed(from parent: Relation, named name: String) -> Relationship? {
        guard
            let found = self.computedRelationships.first(where: {
                $0.parentSchema == parent.schema && $0.parent == parent.name && $0.function == name
            }),
            let target = self.relation(schema: found.targetSchema, name: found.target)
        else { return nil }
        return Relationship(
            foreignKey: nil, target: target, cardinality: found.toOne ? .manyToOne : .oneToMany,
            link: .function(schema: found.schema, name: found.function))
    }

    /// The many-to-many relationships from `parent` to the relation named `name`, as PostgREST finds them: a table of
    /// the exposed schemas with a foreign key to each whose columns all lie in its primary key (the junction), matched
    /// by the target's name only and narrowed by `hint` to the junction's name.
    private func manyToMany(from parent: Relation, to name: String, junctionHint hint: String?) -> [Relationship] {
        var found: [Relationship] = []
        for toParent in self.foreignKeys where toParent.referencedSchema == parent.schema && toParent.referencedTable == parent.name {
            guard let junction = self.relation(schema: toParent.schema, name: toParent.table), hint == nil || hint == junction.name else { continue }
            for toTarget in self.foreignKeys
            where toTarget.name != toParent.name && toTarget.schema == junction.schema && toTarget.table == junction.name
                && toTarget.referencedTable == name
            {
                guard let target = self.relation(schema: toTarget.referencedSchema, name: toTarget.referencedTable),
                    Set(toParent.columns + toTarget.columns).isSubset(of: junction.primaryKey)
                else { continue }
                found.append(
                    Relationship(
                        foreignKey: toTarget, target: target, cardinality: .manyToMany,
                        link: .junction(
                            Relationship.Junction(
                                relation: junction,
                                toTarget: zip(toTarget.columns, toTarget.referencedColumns).map { (junction: $0.0, target: $0.1) },
                                toParent: zip(toParent.columns, toParent.referencedColumns).map { (junction: $0.0, parent: $0.1) }))))
            }
        }
        return found
    }

    /// 400 `PGRST200` in PostgREST's words, with its "Perhaps you meant" hint: the related table most like `name`
    /// (not `name` itself), or, when `parent` has no relationship at all, the related table most like `parent`.
    private func noRelationship(from parent: Relation, to name: String, hint: String?) -> PostgRESTRefusal {
        let linked = { (key: ForeignKey) -> (from: String, to: String)? in
            // Between relations of the schema cache (a partition's own copy of its parent's key is not one).
            guard key.schema == parent.schema, key.referencedSchema == parent.schema,
                self.relation(schema: key.schema, name: key.table) != nil,
                self.relation(schema: key.referencedSchema, name: key.referencedTable) != nil
            else { return nil }
            return (key.table, key.referencedTable)
        }
        let links = self.foreignKeys.compactMap(linked)
        let children = links.flatMap { link -> [String] in
            (link.from == parent.name ? [link.to] : []) + (link.to == parent.name ? [link.from] : [])
        }
        let suggestion: String?
        if children.isEmpty {
            let parents = Set(links.flatMap { [$0.from, $0.to] })
            suggestion = Self.mostLike(parent.name, among: parents).map { "Perhaps you meant '\($0)' instead of '\(parent.name)'." }
        } else {
            suggestion = Self.mostLike(name, among: Set(children)).map { "Perhaps you meant '\($0)' instead of '\(name)'." }
        }
        let using = hint.map { "' using the hint '\($0)" } ?? ""
        return PostgRESTRefusal(
            .badRequest, code: PostgRESTCode.noRelationship,
            message: "Could not find a relationship between '\(parent.name)' and '\(name)' in the schema cache",
            details:
                "Searched for a foreign key relationship between '\(parent.name)' and '\(name)\(using)' in the schema '\(parent.schema)', but no matches were found.",
            hint: suggestion)
    }

    /// The name of `names` most like `name` but not equal to it, if alike enough (PostgREST's fuzzy set keeps
    /// matches scoring at least a third); of equally alike names the first in order, so the answer is always the same.
    private static func mostLike(_ name: String, among names: Set<String>) -> String? {
        let best = names.filter { $0 != name }.sorted().max { nameSimilarity($0, name) < nameSimilarity($1, name) }
        return best.flatMap { nameSimilarity($0, name) >= 1.0 / 3 ? $0 : nil }
    }
}
