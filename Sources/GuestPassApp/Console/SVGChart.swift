import Foundation

/// Line charts drawn on the server as SVG text, for the console's health page: no script, no library, nothing fetched
/// (the console's Content-Security-Policy allows none). Each chart has a `<title>`, `role="img"` and an `aria-label`
/// that states its latest values, so a screen reader hears what a sighted reader sees; every text is XML-escaped.
public enum SVGChart {
    /// One line: a name and its values, oldest first, one per step.
    public struct Series: Sendable {
        public let name: String
        public let values: [Double]
        public init(name: String, values: [Double]) {
            self.name = name
            self.values = values
        }
    }

    static let width = 640.0
    static let height = 200.0
    static let left = 48.0
    static let right = 8.0
    static let top = 12.0
    static let bottom = 40.0
    static let colors = ["#0a58ca", "#b42318", "#1a7f37", "#8250df", "#bf8700", "#0598bc", "#57606a"]

    /// A chart of `series` over the last `minutes` minutes, the y axis from 0 to the largest value (at least 1),
    /// labelled in `unit`.
    public static func lines(title: String, unit: String, series: [Series], minutes: Int = 60) -> String {
        let plotWidth = Self.width - Self.left - Self.right
        let plotHeight = Self.height - Self.top - Self.bottom
        let peak = max(1, series.flatMap(\.values).max() ?? 0)
        let latest = series.map { "\($0.name) \(Self.number($0.values.last ?? 0)) \(unit)" }.joined(separator: ", ")
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" role="img" \
            aria-label="\(Self.escape("\(title): now \(latest.isEmpty ? "no data" : latest)"))">
            <title>\(Self.escape(title))</title>
            <rect x="\(Self.left)" y="\(Self.top)" width="\(plotWidth)" height="\(plotHeight)" fill="none" stroke="#d0d7de"/>
            <text x="\(Self.left - 4)" y="\(Self.top + 10)" text-anchor="end" font-size="11">\(Self.escape(Self.number(peak)))</text>
            <text x="\(Self.left - 4)" y="\(Self.top + plotHeight)" text-anchor="end" font-size="11">0</text>
            <text x="\(Self.left)" y="\(Self.height - Self.bottom + 14)" font-size="11">−\(minutes) min</text>
            <text x="\(Self.width - Self.right)" y="\(Self.height - Self.bottom + 14)" text-anchor="end" font-size="11">now (\(Self.escape(unit)))</text>

            """
        if series.allSatisfy({ $0.values.allSatisfy { $0 == 0 } }) {
            svg +=
                "<text x=\"\(Self.left + plotWidth / 2)\" y=\"\(Self.top + plotHeight / 2)\" text-anchor=\"middle\" font-size=\"13\">no data</text>\n"
        }
        for (index, line) in series.enumerated() {
            let color = Self.colors[index % Self.colors.count]
            let step = line.values.count > 1 ? plotWidth / Double(line.values.count - 1) : 0
            let points = line.values.enumerated().map { offset, value in
                "\(Self.number(Self.left + Double(offset) * step)),\(Self.number(Self.top + plotHeight * (1 - value / peak)))"
            }
            if !points.isEmpty {
                svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>\n"
            }
            let x = Self.left + Double(index % 4) * 150
            let y = Self.height - 18 + Double(index / 4) * 14
            svg += "<rect x=\"\(Self.number(x))\" y=\"\(Self.number(y - 8))\" width=\"10\" height=\"3\" fill=\"\(color)\"/>"
            svg += "<text x=\"\(Self.number(x + 14))\" y=\"\(Self.number(y))\" font-size=\"11\">\(Self.escape(line.name))</text>\n"
        }
        return svg + "</svg>"
    }

    /// A value as short text: whole numbers without a fraction, others with up to two decimals.
    static func number(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int(value)) }
        return String(format: "%.2f", value)
    }

    /// `text` safe in XML text and attributes.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
