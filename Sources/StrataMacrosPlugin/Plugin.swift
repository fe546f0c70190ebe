import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct StrataMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [StoredModelMacro.self, FieldMacro.self]
}
