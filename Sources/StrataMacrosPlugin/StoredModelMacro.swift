import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@StoredModel`: reads a struct's stored properties once, at compile time, and writes what
/// Strata needs of it — the field list (`storedFields`), the record coding (`RecordCodable`)
/// and a `Codable` conformance that stores the same values (the record coding stores
/// number-like fields first; see `StoredProperty.recordOrder`).
public struct StoredModelMacro: ExtensionMacro {
    /// The extension declaring the conformances and members.
    /// - Parameters:
    ///   - node: The `@StoredModel` attribute.
    ///   - declaration: The struct it is attached to.
    ///   - type: The struct's type.
    ///   - protocols: The protocols the compiler asks the extension to conform to.
    ///   - context: The expansion's context, for diagnostics.
    /// - Returns: The extension, or none when the declaration is refused (with a diagnostic).
    /// - Throws: Never; problems are reported as diagnostics.
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        do {
            return try extensions(of: node, attachedTo: declaration, providingExtensionsOf: type, conformingTo: protocols)
        } catch let error as MacroError {
            // At the property or member at fault, not at the attribute.
            context.diagnose(Diagnostic(node: error.node, message: error))
            return []
        }
    }

    private static func extensions(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax]
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            throw MacroError(node: Syntax(node), "@StoredModel applies to a struct: a stored model is a value")
        }
        if let codingKeys = structDecl.memberBlock.members.first(where: { $0.decl.as(EnumDeclSyntax.self)?.name.text == "CodingKeys" }) {
            throw MacroError(node: Syntax(codingKeys), "@StoredModel names stored fields itself: replace CodingKeys with @Field(name:) on the properties")
        }
        let fields = try structDecl.memberBlock.members.flatMap { try StoredProperty.all(in: $0.decl) }
        guard !fields.isEmpty else {
            throw MacroError(node: Syntax(node), "@StoredModel found no stored properties in \(structDecl.name.text)")
        }
        // The record codec stores number-like fields first (`StoredProperty.recordOrder`);
        // the `Codable` conformance keeps declaration order, which other encoders (JSON)
        // show. Strata reads either order.
        let recordOrder = StoredProperty.recordOrder(fields)
        let access = accessModifier(of: structDecl)
        let conformances = protocols.map(\.trimmedDescription).joined(separator: ", ")
        let header = conformances.isEmpty ? "extension \(type.trimmedDescription)" : "extension \(type.trimmedDescription): \(conformances)"
        let source = """
        \(header) {
            \(access)static var storedFields: [Strata.StoredField<Self>] {
                [
        \(fields.map { "            .field(\\Self.\($0.property), name: \(literal($0.name))\($0.originalName.map { ", originalName: \(literal($0))" } ?? ""))," }.joined(separator: "\n"))
                ]
            }

            \(access)func encode(to record: inout Strata.RecordWriter) throws {
        \(recordOrder.map { "        try record.\($0.isOptional ? "encodeIfPresent" : "encode")(self.\($0.property), forKey: \(literal($0.name)))" }.joined(separator: "\n"))
            }

            \(access)init(from record: inout Strata.RecordReader) throws {
        \(recordOrder.filter(\.isDecoded).map { "        self.\($0.property) = try record.\($0.isOptional ? "decodeIfPresent" : "decode")(\($0.valueType).self, forKey: \($0.readKey("record")))" }.joined(separator: "\n"))
            }

            \(access)func encode(to encoder: any Swift.Encoder) throws {
                var container = encoder.container(keyedBy: Strata.StoredFieldKey.self)
        \(fields.map { "        try container.\($0.isOptional ? "encodeIfPresent" : "encode")(self.\($0.property), forKey: \(literal($0.name)))" }.joined(separator: "\n"))
            }

            \(access)init(from decoder: any Swift.Decoder) throws {
                let container = try decoder.container(keyedBy: Strata.StoredFieldKey.self)
        \(fields.filter(\.isDecoded).map { "        self.\($0.property) = try container.\($0.isOptional ? "decodeIfPresent" : "decode")(\($0.valueType).self, forKey: \($0.readKey("container")))" }.joined(separator: "\n"))
            }
        }
        """
        return [try ExtensionDeclSyntax("\(raw: source)")]
    }

    private static func accessModifier(of decl: StructDeclSyntax) -> String {
        for modifier in decl.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }
}

/// `@Field(name:originalName:)`: read by `@StoredModel`; expands to nothing itself.
public struct FieldMacro: PeerMacro {
    /// Nothing: `@Field` only annotates a property for `@StoredModel`.
    /// - Parameters:
    ///   - node: The `@Field` attribute.
    ///   - declaration: The property it is attached to.
    ///   - context: The expansion's context.
    /// - Returns: No declarations.
    /// - Throws: Never.
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] { [] }
}

/// A Swift string literal for `text`.
func literal(_ text: String) -> String {
    var escaped = "\""
    for character in text {
        if character == "\\" || character == "\"" { escaped.append("\\") }
        escaped.append(character)
    }
    return escaped + "\""
}

/// An error at a place in the source, shown by the compiler.
struct MacroError: Error, DiagnosticMessage {
    let node: Syntax
    let message: String
    init(node: Syntax, _ message: String) { (self.node, self.message) = (node, message) }
    var diagnosticID: MessageID { MessageID(domain: "StrataMacros", id: "StoredModel") }
    var severity: DiagnosticSeverity { .error }
}
