// The engine types the typed layer's public API is written in, re-exported one by one:
// a module built on `Strata` (the DAO, ActiveRecord and Repository layers, an app) imports
// `Strata` alone and sees keys, never the engine's trees, transactions or files.
@_exported import struct StrataEngine.Key
@_exported import protocol StrataEngine.KeyComponent
@_exported import enum StrataEngine.KeyElement
@_exported import enum StrataEngine.XXH64
@_exported import protocol StrataEngine.DescribedError

import StrataEngine

extension StrataStorage {
    /// How the database file is opened: durability, cache, read-only (`Database.Options`).
    public typealias Options = Database.Options
}
