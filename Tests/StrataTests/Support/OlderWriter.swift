import Foundation
import Strata
import StrataEngine

/// Stores a record the way a Strata from before the catalog checked field types could
/// have: encoded with the collection's field table and put straight into its records tree.
/// For tests of how reads treat records that do not fit the reading model.
func plantRecord<M: Encodable>(_ model: M, primaryKey: Key, in storage: StrataStorage, collection: String, fieldNames: [String]) throws {
    var fields = FieldTable(names: fieldNames)
    let bytes = try RecordEncoder.encode(model, fields: &fields, collection: collection)
    precondition(fields.names == fieldNames, "the model's fields must be the collection's, in order")
    try storage.database.write { tx in try tx.put(bytes, forKey: primaryKey.bytes, in: "c:" + collection) }
}
