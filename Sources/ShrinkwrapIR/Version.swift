/// Shrinkwrap's version: `shrinkwrap --version`, the sweep report's `tool`,
/// and the producer version written into exported files.
public let shrinkwrapVersion = "0.1.0"
