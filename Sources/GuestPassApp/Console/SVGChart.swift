import Foundation

/// Line charts drawn on the server as SVG text, for the console's health page: no script, no library, nothing fetched
/// (the console's Content-Security-Policy allows none). Each chart has a `<title>`, `role="img"` and an `aria-label`
/// that states its latest values, so a screen reader hears what a sighted reader sees; every text is XML-escaped.
///
/// The plot is `width` × `height` user units with margins; time runs left to right over the chart's time range (by
/// default from the first to the last time of any point), values bottom to top from the lower of 0 and the smallest
/// value to the larger of 1 and the largest. Values that are not finite are left out of their line.
public enum SVGChart {
    /// One point of a line: a time (any unit: seconds since 1970, a step number) and its value.
    public struct Point: Sendable, Equatable {
        public let time: Double
        public let value: Double
        public init(time: Double, value: Double) {
            self.time = time
            self.value = value
        }
    }

    /// One line: a name and its points, in time order.
    public struct Series: Sendable {
        public let name: String
        public let points: [Point]

        public init(name: String, points: [Point]) {
            self.name = name
            self.points = points
        }

        /// A line of evenly spaced values, oldest first: value `i` at time `i`.
        public init(name: String, values: [Double]) {
            self.init(name: name, points: values.enumerated().map { Point(time: Double($0.offset), value: $0.element) })
        }

        /// The values of the points, in order.
        public var values: [Double] { self.points.map(\.value) }
    }

    static let width = 640.0
    static let height = 200.0
    static let left = 48.0
    static let right = 8.0
    static let top = 12.0
    static let bottom = 40.0
    static let colors = ["#0a58ca", "#b42318", "#1a7f37", "#8250df", "#bf8700", "#0598bc", "#57606a"]

    /// A chart of `series`. `timeRange` is the time at the left and right edges (by default the first and last time of
    /// any point); `startLabel` and `endLabel` label them (by default the last `minutes` minutes, up to now); the
    /// value axis is labelled in `unit`.
    public static func lines(
        title: String, unit: String, series: [Series], minutes: Int = 60, timeRange: ClosedRange<Double>? = nil,
        startLabel: String? = nil, endLabel: String = "now"
    ) -> String {
        let plotWidth = Self.width - Self.left - Self.right
        let plotHeight = Self.height - Self.top - Self.bottom
        let finite = series.flatMap(\.points).filter { $0.value.isFinite && $0.time.isFinite }
        let low = min(0, finite.map(\.value).min() ?? 0)
        let high = max(low + 1, finite.map(\.value).max() ?? 0)
        let allTimes = series.flatMap(\.points).map(\.time).filter(\.isFinite)
        let times = timeRange ?? ((allTimes.min() ?? 0)...(allTimes.max() ?? 0))
        let latest = series.map { "\($0.name) \(Self.number($0.points.last { $0.value.isFinite }?.value ?? 0)) \(unit)" }
            .joined(separator: ", ")
        let empty = finite.allSatisfy { $0.value == 0 }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" role="img" \
            aria-label="\(Self.escape("\(title): now \(empty ? "no data" : latest)"))">
            <title>\(Self.escape(title))</title>
            <rect x="\(Self.left)" y="\(Self.top)" width="\(plotWidth)" height="\(plotHeight)" fill="none" stroke="#d0d7de"/>
            <text x="\(Self.left - 4)" y="\(Self.top + 10)" text-anchor="end" font-size="11">\(Self.escape(Self.number(high)))</text>
            <text x="\(Self.left - 4)" y="\(Self.top + plotHeight)" text-anchor="end" font-size="11">\(Self.escape(Self.number(low)))</text>
            <text x="\(Self.left)" y="\(Self.height - Self.bottom + 14)" font-size="11">\(Self.escape(startLabel ?? "−\(minutes) min"))</text>
            <text x="\(Self.width - Self.right)" y="\(Self.height - Self.bottom + 14)" text-anchor="end" font-size="11">\
            \(Self.escape("\(endLabel) (\(unit))"))</text>

            """
        if empty {
            svg +=
                "<text x=\"\(Self.number(Self.left + plotWidth / 2))\" y=\"\(Self.number(Self.top + plotHeight / 2))\" text-anchor=\"middle\" font-size=\"13\">no data</text>\n"
        }
        let span = times.upperBound - times.lowerBound
        for (index, line) in series.enumerated() {
            let color = Self.colors[index % Self.colors.count]
            let points = line.points.filter { $0.value.isFinite && $0.time.isFinite }.map { point in
                let x = span > 0 ? Self.left + plotWidth * (point.time - times.lowerBound) / span : Self.left
                let y = Self.top + plotHeight * (1 - (point.value - low) / (high - low))
                return "\(Self.number(x)),\(Self.number(y))"
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

    /// `text` safe in XML text and attributes; characters XML 1.0 does not allow (most controls) are dropped.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            case "\t", "\n", "\r": escaped.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): continue
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
