import Foundation
import Strata
import StrataRepository
import Testing

@Suite("Repository errors")
struct RepositoryErrorTests {
    @Test("localizedDescription names the item, as description does")
    func localizedDescription() {
        let error: any Error = RepositoryError.recordNotFound(id: "42")
        #expect(error.localizedDescription == RepositoryError.recordNotFound(id: "42").description)
        #expect(error.localizedDescription == "no item with id '42'")
    }
}
