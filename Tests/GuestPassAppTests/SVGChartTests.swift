import Foundation
import FoundationXML
import Testing

@testable import GuestPassApp

/// The console's server-drawn charts (`SVGChart`): well-formed XML (FoundationXML's parser), points where their time and
/// value put them, text escaped, no script, accessible names, and "no data" for an empty chart.
@Suite struct SVGChartTests {
    /// What the parser saw: element counts, attributes of each element, the text.
    final class Parsed: NSObject, XMLParserDelegate {
        var elements: [String: Int] = [:]
        var attributes: [String: [[String: String]]] = [:]
        var text = ""
        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]
        ) {
            self.elements[name, default: 0] += 1
            self.attributes[name, default: []].append(attributes)
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { self.text += string }
    }

    func parse(_ svg: String) throws -> Parsed {
        let parser = XMLParser(data: Data(svg.utf8))
        let parsed = Parsed()
        parser.delegate = parsed
        try #require(parser.parse(), "not well-formed XML (\(parser.parserError.map { "\($0)" } ?? "")): \(svg)")
        return parsed
    }

    /// The (x, y) pairs of each polyline, in order.
    func lines(_ parsed: Parsed) -> [[(Double, Double)]] {
        (parsed.attributes["polyline"] ?? []).map { attributes in
            (attributes["points"] ?? "").split(separator: " ").map { pair in
                let xy = pair.split(separator: ",").compactMap { Double($0) }
                return (xy[0], xy[1])
            }
        }
    }

    @Test func aChartIsWellFormedAccessibleSVGWithOneLinePerSeries() throws {
        let svg = SVGChart.lines(
            title: "Requests <per> second & more", unit: "req/s",
            series: [.init(name: "auth", values: [0, 1, 2, 4]), .init(name: "<script>alert('x')</script>", values: [4, 3, 2, 1])])
        let parsed = try self.parse(svg)
        #expect(parsed.elements["svg"] == 1 && parsed.elements["polyline"] == 2 && parsed.elements["title"] == 1)
        #expect(parsed.elements["script"] == nil && !svg.contains("<script") && svg.contains("&lt;script&gt;alert(&apos;x&apos;)"))
        let root = try #require(parsed.attributes["svg"]?.first)
        #expect(root["role"] == "img" && root["xmlns"] == "http://www.w3.org/2000/svg")
        #expect(root["aria-label"] == "Requests <per> second & more: now auth 4 req/s, <script>alert('x')</script> 1 req/s")
        #expect(parsed.text.contains("Requests <per> second & more") && parsed.text.contains("<script>alert('x')</script>"))
        #expect(parsed.attributes.values.joined().allSatisfy { $0.keys.allSatisfy { !$0.lowercased().hasPrefix("on") } })
        #expect(!svg.lowercased().contains("javascript:") && !svg.contains("href"))
    }

    /// Plot area: x 48…632, y 12 (the top: the largest value) … 160 (the bottom: 0).
    @Test func pointsMapToTheirCoordinates() throws {
        let svg = SVGChart.lines(title: "t", unit: "u", series: [.init(name: "a", values: [0, 1, 2, 4])])
        let line = try #require(self.lines(try self.parse(svg)).first)
        let xs: [Double] = line.map(\.0)
        let ys: [Double] = line.map(\.1)
        #expect(xs == [48, 242.67, 437.33, 632])
        #expect(ys == [160, 123, 86, 12])

        // By time: the range's ends are the plot's edges; a point in the middle of the range is in the middle.
        let timed = SVGChart.lines(
            title: "t", unit: "u",
            series: [.init(name: "a", points: [.init(time: 1000, value: 10), .init(time: 1300, value: 5), .init(time: 1600, value: 0)])],
            timeRange: 1000...1600, startLabel: "10:00", endLabel: "10:10")
        let parsed = try self.parse(timed)
        let points = try #require(self.lines(parsed).first)
        let timedXs: [Double] = points.map(\.0)
        let timedYs: [Double] = points.map(\.1)
        #expect(timedXs == [48, 340, 632] && timedYs == [12, 86, 160])
        #expect(parsed.text.contains("10:00") && parsed.text.contains("10:10 (u)") && parsed.text.contains("10"))

        // A value range below zero moves the bottom label; values that are not numbers are left out.
        let negative = SVGChart.lines(title: "t", unit: "u", series: [.init(name: "a", values: [-2, .nan, 2, .infinity])])
        let negativeLine = try #require(self.lines(try self.parse(negative)).first)
        let negativeXs: [Double] = negativeLine.map(\.0)
        let negativeYs: [Double] = negativeLine.map(\.1)
        #expect(negativeXs == [48, 437.33] && negativeYs == [160, 12])
        #expect(!negative.contains("nan") && !negative.contains("inf") && negative.contains(">-2</text>"))
    }

    @Test func anEmptyChartSaysNoData() throws {
        for series: [SVGChart.Series] in [[], [.init(name: "open", values: [])], [.init(name: "open", values: [0, 0, 0])]] {
            let svg = SVGChart.lines(title: "Realtime sockets", unit: "sockets", series: series)
            let parsed = try self.parse(svg)
            #expect(parsed.text.contains("no data"))
            #expect(parsed.attributes["svg"]?.first?["aria-label"] == "Realtime sockets: now no data")
        }
        #expect(!(try self.parse(SVGChart.lines(title: "t", unit: "u", series: [.init(name: "a", values: [0, 1])]))).text.contains("no data"))
    }

    @Test func textIsEscapedEvenWhereXMLForbidsCharacters() throws {
        let hostile = "a\u{0}b\u{1b}c\"d'e<f>g&h\u{FFFE}"
        let svg = SVGChart.lines(title: hostile, unit: hostile, series: [.init(name: hostile, values: [1])])
        let parsed = try self.parse(svg)
        #expect(parsed.text.contains("abc\"d'e<f>g&h"))
        #expect(SVGChart.escape("<&>\"'") == "&lt;&amp;&gt;&quot;&apos;")
    }
}
