-- What the balancer asks every gateway that is up, with the client's own
-- token, keeping no state: loaded by haproxy.cfg (lua-load); HAProxy 2.5+
-- (core.httpclient).
--
-- kennel_list, a service: GET /api/kernels and GET /api/sessions through the
-- balancer, every gateway's list, not only the one a round robin would pick
-- (jupyter_server's GatewayClient drops the kernels a list misses as
-- "culled"). Each gateway is asked with the client's own Authorization
-- header and query, and the JSON arrays are joined as they are: no parsing.
-- A gateway that answers something other than 200 makes the answer (a 401
-- for a wrong token, as one gateway would give it).
--
-- kennel_conversation, an action: a request naming a conversation id
-- (txn.conversation, set by haproxy.cfg) goes to the gateway that holds that
-- conversation, whichever it is (GET /api/contents/ID answers 200 there
-- only), else to the one a rendezvous hash of the id picks among the
-- gateways that are up: txn.shard, which haproxy.cfg's use-server follows.
-- So one conversation id is one kernel in the fleet: a reattach finds its
-- kernel after gateways were added (the hash alone would have moved it),
-- and creates of a new id racing through different balancer replicas land
-- on the same gateway while they see the same gateways up.

-- https with KENNEL_GATEWAY_TLS=ssl: haproxy.cfg's httpclient.ssl settings
-- verify the gateway's certificate against KENNEL_GATEWAY_CA, and its name
-- against the SNI, which HAProxy's httpclient takes from the Host header:
-- kennel-gateway, the name the server lines verify too (an address, what
-- get_addr gives, is no name a certificate check accepts)
local tls = os.getenv("KENNEL_GATEWAY_TLS") == "ssl"

local function ask(server, path, headers)
    local httpclient = core.httpclient()
    local h = {}
    for k, v in pairs(headers) do
        h[k] = v
    end
    if tls then
        h["Host"] = {"kennel-gateway"}
    end
    return httpclient:get{url = (tls and "https://" or "http://") .. server:get_addr() .. path, headers = h,
                          timeout = 10000}
end

local function up(server)
    return server:get_stats()["status"]:sub(1, 2) == "UP"
end

-- kennel-0000000a -> 0000000a
local function shard_of(name)
    return name:match("^kennel%-(%x+)$")
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
        if up(server) then
            local response = ask(server, path, headers)
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

core.register_action("kennel_conversation", {"http-req"}, function(txn)
    local id = txn:get_var("txn.conversation")
    if not id or not id:match("^[A-Za-z0-9._-]+$") then
        return -- the gateway refuses it, naming the rule
    end
    local headers = {}
    local auth = txn.http:req_get_headers()["authorization"]
    if auth then
        headers["Authorization"] = {auth[0]}
    end
    local token = txn.f:url_param("token")
    local path = "/api/contents/" .. id .. "?content=0" .. (token and token ~= "" and "&token=" .. token or "")
    local best, best_score
    for name, server in pairs(core.backends["kennel"].servers) do
        local shard = shard_of(name)
        if shard and up(server) then
            local response = ask(server, path, headers)
            if response.status == 200 then
                txn:set_var("txn.shard", shard)
                return
            end
            local score = txn.c:crc32(name .. "/" .. id, 1)
            if not best_score or score > best_score or (score == best_score and name > best) then
                best, best_score = name, score
            end
        end
    end
    if best then
        txn:set_var("txn.shard", shard_of(best))
    end
end)
