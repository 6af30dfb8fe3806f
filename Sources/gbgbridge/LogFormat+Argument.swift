import ArgumentParser
import GBGBridgeHost

extension LogFormat: ExpressibleByArgument {}
