@_exported import Strata

/// Makes a struct a `Model` whose shape is known at compile time: the macro lists its stored
/// properties (`storedFields`), and writes its record coding (`RecordCodable`, the fast
/// path) and a `Codable` conformance that stores the same values.
///
/// The record coding stores number-like fields (integers, floating-point numbers, Booleans,
/// dates, UUIDs) first and the rest after, each group in declaration order, so that a scan's
/// check on the stored bytes reaches the fields conditions usually compare without stepping
/// over text; the `Codable` conformance keeps declaration order (what a `JSONEncoder` shows).
/// Readers find fields by name, so records in either order, and records written before a
/// type adopted the macro, read the same.
///
/// ```swift
/// import StrataMacros
///
/// @StoredModel
/// struct Note {
///     var id: Int64
///     @Field(originalName: "text") var body: String   // called `text` in version 1
///     var due: Date?
///     static let schema = Schema<Note>(primaryKey: \.id, indexes: [.index(\.due)])
/// }
/// ```
///
/// Every stored property needs its type written out. Computed, `static` and `lazy`
/// properties are not stored; a `let` with an initial value is written and not read back,
/// as synthesized `Codable` does. This product is the only one that builds swift-syntax:
/// a target that does not import it never pays for it.
@attached(extension, conformances: Model, RecordCodable, DescribedModel,
          names: named(storedFields), named(encode(to:)), named(init(from:)))
public macro StoredModel() = #externalMacro(module: "StrataMacrosPlugin", type: "StoredModelMacro")

/// Names a `@StoredModel` property's stored field (`name:`, by default the property's name)
/// and the name earlier versions of the model stored it under (`originalName:`): opening the
/// collection for writing moves the values from the original name to the current one.
@attached(peer)
public macro Field(name: String? = nil, originalName: String? = nil) = #externalMacro(module: "StrataMacrosPlugin", type: "FieldMacro")
