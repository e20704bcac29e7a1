-- GET /api/kernels and GET /api/sessions through the balancer: every
-- gateway's list, not only the one a round robin would pick (jupyter_server's
-- GatewayClient drops the kernels a list misses as "culled"). Each gateway
-- that is up is asked with the client's own Authorization header and query
-- (its token), and the JSON arrays are joined as they are: no parsing, no
-- state. A gateway that answers something other than 200 makes the answer
-- (a 401 for a wrong token, as one gateway would give it).
-- Loaded by haproxy.cfg (lua-load); HAProxy 2.5+ (core.httpclient).

local function list_of(server, path, headers)
    local httpclient = core.httpclient()
    local response = httpclient:get{url = "http://" .. server:get_addr() .. path, headers = headers, timeout = 10000}
    return response
end

local function join(parts)
    local items = {}
    for _, body in ipairs(parts) do
        local inner = body:match("^%s*%[(.*)%]%s*$")
        if inner and inner:match("%S") then
            items[#items + 1] = inner
        end
    end
    return "[" .. table.concat(items, ",") .. "]"
end

core.register_service("kennel_list", "http", function(applet)
    local headers = {}
    local auth = applet.headers["authorization"]
    if auth then
        headers["Authorization"] = {auth[0]}
    end
    local path = applet.path
    if applet.qs and applet.qs ~= "" then
        path = path .. "?" .. applet.qs
    end
    local parts = {}
    for _, server in pairs(core.backends["kennel"].servers) do
        local stats = server:get_stats()
        if stats["status"]:sub(1, 2) == "UP" then
            local response = list_of(server, path, headers)
            if not response.status or response.status == 0 then
                -- gone since its last check: its kernels went with it
            elseif response.status ~= 200 then
                local body = response.body or ""
                applet:set_status(response.status or 502)
                applet:add_header("content-type", "application/json")
                applet:add_header("content-length", tostring(#body))
                applet:start_response()
                applet:send(body)
                return
            else
                parts[#parts + 1] = response.body or "[]"
            end
        end
    end
    local body = join(parts)
    applet:set_status(200)
    applet:add_header("content-type", "application/json")
    applet:add_header("content-length", tostring(#body))
    applet:start_response()
    applet:send(body)
end)
