import SwiftSyntax

/// One stored property of a `@StoredModel` struct, as the macro reads it from the source.
struct StoredProperty {
    /// The property's name in Swift.
    let property: String
    /// The name it is stored under (`@Field(name:)`, else the property's name).
    let name: String
    let originalName: String?
    /// The type, without the optional's `?` when `isOptional`.
    let valueType: String
    let isOptional: Bool
    /// False for a `let` with an initial value: synthesized `Codable` writes it and never
    /// reads it back, and so does the macro.
    let isDecoded: Bool

    /// Whether the value is stored in a few bytes of known layout — an integer, a
    /// floating-point number, a Boolean, a date or a UUID, as far as the written type name
    /// tells (a type alias of one is not recognized, and is stored with the rest).
    var isNumberLike: Bool {
        var type = valueType
        for module in ["Swift.", "Foundation."] where type.hasPrefix(module) { type.removeFirst(module.count) }
        return Self.numberLikeTypes.contains(type)
    }

    private static let numberLikeTypes: Set<String> = [
        "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64",
        "Double", "Float", "TimeInterval", "Bool", "Date", "UUID",
    ]

    /// The properties in the order the record codec stores them: the number-like ones first,
    /// then the rest, each group in declaration order. A scan's check on the stored bytes
    /// (numbers are what conditions compare most) then reaches them without stepping over
    /// text first; readers find fields by name, so the order is the writer's choice.
    static func recordOrder(_ properties: [StoredProperty]) -> [StoredProperty] {
        properties.filter(\.isNumberLike) + properties.filter { !$0.isNumberLike }
    }

    /// The key a reader asks for: the current name, or an original one the record still has.
    func readKey(_ reader: String) -> String {
        guard let originalName else { return literal(name) }
        return "\(reader).storedKey(\(literal(name)), originalNames: [\(literal(originalName))])"
    }

    /// The stored properties a member declares: none for static, computed or lazy ones.
    static func all(in member: DeclSyntax) throws -> [StoredProperty] {
        guard let variable = member.as(VariableDeclSyntax.self) else { return [] }
        let skipped: [Keyword] = [.static, .class, .lazy]
        if variable.modifiers.contains(where: { modifier in skipped.contains { modifier.name.tokenKind == .keyword($0) } }) { return [] }
        let (name, originalName) = try fieldArguments(of: variable)
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        var properties: [StoredProperty] = []
        for binding in variable.bindings {
            guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else {
                throw MacroError(node: Syntax(binding.pattern), "@StoredModel needs one name per stored property")
            }
            if let accessors = binding.accessorBlock, isComputed(accessors) { continue }
            guard let annotation = binding.typeAnnotation?.type else {
                throw MacroError(node: Syntax(binding), "@StoredModel needs the type of '\(identifier.identifier.text)' written out: var \(identifier.identifier.text): Type")
            }
            if variable.bindings.count > 1, name != nil {
                throw MacroError(node: Syntax(variable), "@Field(name:) applies to one property: declare it on a line of its own")
            }
            let (valueType, isOptional) = unwrapOptional(annotation)
            let propertyName = identifier.identifier.text.filter { $0 != "`" }
            properties.append(StoredProperty(
                property: identifier.identifier.text, name: name ?? propertyName, originalName: originalName,
                valueType: valueType, isOptional: isOptional, isDecoded: !(isLet && binding.initializer != nil)))
        }
        return properties
    }

    /// A block with a getter (explicit or implicit) is computed; one with only observers is stored.
    private static func isComputed(_ block: AccessorBlockSyntax) -> Bool {
        switch block.accessors {
        case .getter: return true
        case .accessors(let list):
            return list.contains { [.keyword(.get), .keyword(._read), .keyword(.unsafeAddress)].contains($0.accessorSpecifier.tokenKind) }
        }
    }

    /// `T?`, `T!` and `Optional<T>` are optional fields of `T`.
    private static func unwrapOptional(_ type: TypeSyntax) -> (String, Bool) {
        if let optional = type.as(OptionalTypeSyntax.self) { return (optional.wrappedType.trimmedDescription, true) }
        if let implicit = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return (implicit.wrappedType.trimmedDescription, true) }
        if let generic = type.as(IdentifierTypeSyntax.self), generic.name.text == "Optional",
           let argument = generic.genericArgumentClause?.arguments.first {
            return (argument.argument.trimmedDescription, true)
        }
        return (type.trimmedDescription, false)
    }

    /// The `name:` and `originalName:` string literals of a `@Field(...)` attribute.
    private static func fieldArguments(of variable: VariableDeclSyntax) throws -> (name: String?, originalName: String?) {
        for element in variable.attributes {
            guard let attribute = element.as(AttributeSyntax.self),
                  attribute.attributeName.trimmedDescription == "Field" || attribute.attributeName.trimmedDescription == "StrataMacros.Field",
                  case .argumentList(let arguments)? = attribute.arguments else { continue }
            var result: (name: String?, originalName: String?) = (nil, nil)
            for argument in arguments {
                guard let string = argument.expression.as(StringLiteralExprSyntax.self), string.segments.count == 1,
                      case .stringSegment(let segment)? = string.segments.first else {
                    throw MacroError(node: Syntax(argument), "@Field takes string literals")
                }
                switch argument.label?.text {
                case "name": result.name = segment.content.text
                case "originalName": result.originalName = segment.content.text
                default: throw MacroError(node: Syntax(argument), "@Field takes name: and originalName:")
                }
            }
            return result
        }
        return (nil, nil)
    }
}
