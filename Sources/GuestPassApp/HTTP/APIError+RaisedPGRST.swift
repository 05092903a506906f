import GuestPassJSON
import GuestPassStore
public import HTTPTypes

extension APIError {
    /// An app's own `RAISE SQLSTATE 'PGRST' USING message = '{"code": …, "message": …, "details": …, "hint": …}',
    /// detail = '{"status": 4xx, "status_text": …, "headers": {…}}'`: PostgREST's full control of the response, as it
    /// answers it: the message's members as the body, the detail's status, reason phrase and headers. Either not
    /// such JSON is PostgREST's 500 `PGRST121`, naming which. GuestPass's own `PGRST` raises carry a bare code as their
    /// message (`postgREST(_:anonymous:retryAfter:)` answers those first).
    static func raisedByApp(message: String, detail: String?) -> APIError {
        guard let body = try? JSONValue.parse(message).objectValue, let code = body["code"]?.stringValue,
            let text = body["message"]?.stringValue
        else {
            return self.unparsableRaise(
                details: "Invalid JSON value for MESSAGE: '\(message)'",
                hint: "MESSAGE must be a JSON object with obligatory keys: 'code', 'message' and optional keys: 'details', 'hint'.")
        }
        guard let detail else { return self.unparsableRaise(details: "DETAIL is missing in the RAISE statement") }
        guard let response = try? JSONValue.parse(detail).objectValue, let status = response["status"].flatMap(Self.statusCode),
            let fields = response["headers"]?.objectValue
        else {
            return self.unparsableRaise(details: "Invalid JSON value for DETAIL: '\(detail)'")
        }
        var headers = HTTPFields()
        for (name, value) in fields {
            guard let name = HTTPField.Name(name), let value = value.stringValue else { continue }
            headers[name] = value
        }
        let reason = response["status_text"]?.stringValue ?? HTTPResponse.Status(code: status).reasonPhrase
        return APIError(
            HTTPResponse.Status(code: status, reasonPhrase: reason), code: code, message: text, details: body["details"]?.stringValue,
            hint: body["hint"]?.stringValue, headers: headers)
    }

    /// A status code written as a JSON integer, 100 to 599.
    private static func statusCode(_ value: JSONValue) -> Int? {
        guard case .number(let number) = value, let code = Int(number.text), (100...599).contains(code) else { return nil }
        return code
    }

    private static func unparsableRaise(
        details: String,
        hint: String = "DETAIL must be a JSON object with obligatory keys: 'status', 'headers' and optional key: 'status_text'."
    ) -> APIError {
        APIError(
            .internalServerError, code: PostgRESTCode.raiseNotParsed, message: "Could not parse JSON in the \"RAISE SQLSTATE 'PGRST'\" error",
            details: details, hint: hint)
    }
}
