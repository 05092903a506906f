import PostgRESTGrammar

extension TablePlan {
    /// The columns a write's `RETURNING` hands its representation, as PostgREST chooses them (`inferColsEmbedNeeds`):
    /// the selected columns, the parent's columns of each embedding's link, the root order's columns and the primary
    /// key; nil (every column) for a `*`, a computed field or a computed relationship, which read the whole row (and
    /// when nothing names a column).
    /// Returning no more than that is what lets a role write a table it may read only in part: `DELETE … select=id,email`
    /// needs SELECT on those two columns, not on `password`, while `select=*` still needs every column (42501).
    /// A name that is no column stays out of the list: the select list's own check answers for it.
    func returnedColumns() throws -> [String]? {
        var names = self.relation.primaryKey
        for item in self.query.select {
            switch item {
            case .star:
                return nil
            case .field(let field):
                guard self.relation.column(field.field.column) != nil else {
                    if self.relation.computedFields[field.field.column] != nil { return nil }
                    continue
                }
                names.append(field.field.column)
            case .embed(let embedding):
                let relationship = try self.catalog.relationship(from: self.relation, to: embedding.relation, hint: embedding.hint)
                switch relationship.link {
                case .columns(let pairs): names += pairs.map(\.parent)
                case .junction(let junction): names += junction.toParent.map(\.parent)
                case .function: return nil
                }
            }
        }
        for term in self.query.root.order where term.relation == nil {
            guard self.relation.column(term.field.column) != nil else { return nil }
            names.append(term.field.column)
        }
        var seen: Set<String> = []
        return names.isEmpty ? nil : names.filter { seen.insert($0).inserted }
    }
}
