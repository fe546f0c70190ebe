// Helper process for the catalog tests: a separately built program with its own model type
// for the "persons" collection, so a test can check that what one binary records about an
// index (its name, its fields, its entries) is what another binary finds. Not a user tool.
//
//   StrataModelChild add PATH ID FIRST LAST   persist one person
//   StrataModelChild find PATH FULLNAME       print the ids whose fullName matches, through the index
import Foundation
import Strata

struct Person: Model {
    var id: Int64
    var first: String
    var last: String
    var fullName: String { first + " " + last }
    static let collectionName = "persons"
    static let schema = Schema<Person>(primaryKey: \.id, indexes: [.index(\.fullName, name: "fullName")])
}

let arguments = CommandLine.arguments
do {
    let storage = try StrataStorage(path: arguments[2])
    switch arguments[1] {
    case "add":
        try storage.persist(Person(id: Int64(arguments[3])!, first: arguments[4], last: arguments[5]))
    case "find":
        let query = Person.filter(\.fullName == arguments[3])
        let plan = try storage.explain(query)
        print(try storage.read(query).map { String($0.id) }.joined(separator: ",") + " via \(plan.access)")
    default:
        exit(2)
    }
    try storage.close()
} catch {
    FileHandle.standardError.write(Data("StrataModelChild: \(error)\n".utf8))
    exit(1)
}
