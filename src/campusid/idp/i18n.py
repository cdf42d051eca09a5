"""Page text in English and Simplified Chinese, chosen from the browser's Accept-Language.

Only our own fixed text is translated; what users typed (names, feedback) is shown as typed,
and the service's detailed error messages stay English beneath a translated summary.
"""

from __future__ import annotations

from collections.abc import Callable

LANGUAGES = ("en", "zh-CN")

_TEXT: dict[str, tuple[str, str]] = {
    # navigation and frame
    "nav.portal": ("Developer portal", "开发者门户"),
    "nav.admin": ("Review console", "审核控制台"),
    "nav.signout": ("Sign out", "退出登录"),
    "nav.signed_in_as": ("Signed in as", "当前用户"),
    # states
    "state.draft": ("Draft", "草稿"),
    "state.under_review": ("Under review", "审核中"),
    "state.approved": ("Approved", "已批准"),
    "state.active": ("Active", "已启用"),
    "state.rejected": ("Rejected", "已驳回"),
    "state.suspended": ("Suspended", "已停用"),
    "revision.under_review": ("Change under review", "变更审核中"),
    "revision.rejected": ("Change rejected", "变更已驳回"),
    # actions in the history
    "action.create": ("Created", "创建"),
    "action.edit": ("Edited", "编辑"),
    "action.submit": ("Submitted for review", "提交审核"),
    "action.approve": ("Approved", "批准"),
    "action.reject": ("Rejected", "驳回"),
    "action.activate": ("Activated", "启用"),
    "action.suspend": ("Suspended", "停用"),
    "action.reinstate": ("Reinstated", "恢复"),
    "action.rotate_secret": ("Secret rotated", "更换密钥"),
    "action.revision_submit": ("Change submitted for review", "提交变更审核"),
    "action.revision_approve": ("Change approved", "变更已批准"),
    "action.revision_reject": ("Change rejected", "变更已驳回"),
    # portal
    "portal.title": ("My applications", "我的应用"),
    "portal.lead": (
        "Register applications that sign students in with campusid, and follow their review.",
        "注册使用 campusid 登录的应用，并跟踪审核进度。",
    ),
    "portal.new": ("Register a new application", "注册新应用"),
    "portal.none": ("You have not registered any application yet.", "你还没有注册任何应用。"),
    "portal.not_developer": (
        "Only developers and administrators may register applications. Ask an administrator for the developer role.",
        "只有开发者和管理员可以注册应用。请联系管理员申请开发者角色。",
    ),
    "app.name": ("Name", "名称"),
    "app.description": ("Description", "描述"),
    "app.type": ("Type", "类型"),
    "app.type.web": ("Web application (runs on a server, gets a secret)", "Web 应用（在服务器上运行，获得密钥）"),
    "app.type.native": ("Native application (desktop or mobile, no secret)", "原生应用（桌面或移动端，无密钥）"),
    "app.redirect_uris": ("Redirect URIs", "重定向 URI"),
    "app.type.cas": (
        "CAS application (a campus app that signs in with CAS 2.0/3.0)",
        "CAS 应用（使用 CAS 2.0/3.0 登录的校园应用）",
    ),
    "app.services": ("CAS service URLs (CAS apps)", "CAS 服务地址（CAS 应用）"),
    "app.services_hint": (
        "One per line: the address every service URL of the app begins with, e.g. https://app.example.edu/portal.",
        "每行一个：该应用所有服务 URL 的共同开头，例如 https://app.example.edu/portal。",
    ),
    "app.cas_proxy": ("proxy tickets for back-end services (CAS apps)", "为后端服务申请代理票据（CAS 应用）"),
    "app.redirect_hint": (
        "One per line. Web apps: https (http only on a loopback host). Native apps: a loopback IP "
        "literal such as http://127.0.0.1/callback, or a private-use scheme like edu.example.app:/callback.",
        "每行一个。Web 应用：https（仅回环地址可用 http）。原生应用：回环 IP，如 http://127.0.0.1/callback，"
        "或反向域名形式的私有协议，如 edu.example.app:/callback。",
    ),
    "app.scopes": ("Requested scopes", "申请的权限范围"),
    "app.granted": ("Granted scopes", "已授予的权限范围"),
    "app.sensitive": ("sensitive: needs a reason and a reviewer's approval", "敏感：需要说明理由并经审核批准"),
    "app.justification": ("Why does the app need it?", "应用为何需要此权限？"),
    "app.post_logout_uris": (
        "Post-logout redirect URIs (optional, one per line)",
        "退出后重定向 URI（可选，每行一个）",
    ),
    "app.backchannel_uri": ("Back-channel logout URI (optional)", "后端通道退出 URI（可选）"),
    "app.logout_hint": (
        "After signing out at campusid the browser may return only to a URI listed here, exactly as written. "
        "Logout notices are POSTed to the back-channel URI when a user's session ends: https, or http on a "
        "loopback host for development.",
        "在 campusid 退出后，浏览器只会返回到此处列出的 URI（须完全一致）。用户会话结束时，退出通知会以 POST "
        "发送到后端通道 URI：须为 https，开发时可用回环地址上的 http。",
    ),
    "app.sector": ("Sector identifier URI (optional)", "扇区标识 URI（可选）"),
    "app.sector_hint": (
        "Needed only when a web app's redirect URIs span several hosts (OIDC Core 8.1).",
        "仅当 Web 应用的重定向 URI 跨多个主机时需要（OIDC Core 8.1）。",
    ),
    "app.client_id": ("Client ID", "客户端 ID"),
    "app.owner": ("Owner", "所有者"),
    "app.state": ("State", "状态"),
    "app.updated": ("Last change", "最近变更"),
    "app.history": ("Review history", "审核记录"),
    "app.feedback": ("Feedback", "反馈"),
    "app.when": ("When", "时间"),
    "app.who": ("Who", "操作人"),
    "app.what": ("What", "操作"),
    "app.secret_once": (
        "This is the client secret. Copy it to your server now: it is shown only this once and cannot be shown again.",
        "这是客户端密钥。请立即复制到你的服务器：它只显示这一次，之后无法再次查看。",
    ),
    "app.public_client": (
        "Native apps are public clients: they have no secret and use PKCE.",
        "原生应用是公开客户端：没有密钥，使用 PKCE。",
    ),
    "app.authorize_url": ("Authorization endpoint", "授权端点"),
    "app.grant_types": ("Sign-in on devices without a browser", "无浏览器设备登录"),
    "app.device_code": (
        "Bots, SSH sessions and lab machines sign in with a short code the person enters on their phone "
        "or computer (device authorization, RFC 8628). A reviewer must grant it.",
        "机器人、SSH 会话和实验室机器通过用户在手机或电脑上输入的短代码登录（设备授权，RFC 8628）。须经审核人授予。",
    ),
    "app.device_code.asked": ("asked for", "已申请"),
    "app.device_code.granted": ("granted", "已授予"),
    "app.device_code.not_granted": ("not granted", "未授予"),
    "app.revision": ("Pending change", "待审核的变更"),
    "app.revision_rejected": (
        "Your last change was rejected; the active configuration is unchanged. "
        "Read the feedback and file the change again.",
        "你上次提交的变更被驳回；当前配置未变。请阅读反馈后重新提交变更。",
    ),
    "app.revision_pending": (
        "This change is under review. Until it is approved, the active configuration keeps serving sign-ins.",
        "此变更正在审核。批准前，当前配置继续用于登录。",
    ),
    "btn.create": ("Register application", "注册应用"),
    "btn.save": ("Save changes", "保存修改"),
    "btn.edit": ("Edit", "编辑"),
    "btn.change": ("Request a change", "申请变更"),
    "btn.submit": ("Submit for review", "提交审核"),
    "btn.activate": ("Activate", "启用"),
    "btn.rotate": ("Rotate secret", "更换密钥"),
    "btn.cancel": ("Cancel", "取消"),
    "btn.approve": ("Approve", "批准"),
    "btn.reject": ("Reject with feedback", "驳回并反馈"),
    "btn.suspend": ("Suspend", "停用"),
    "btn.reinstate": ("Reinstate", "恢复"),
    "btn.set_role": ("Change role", "修改角色"),
    "edit.title": ("Edit application", "编辑应用"),
    "change.title": ("Request a change", "申请变更"),
    "change.lead": (
        "The app is active. Your change is reviewed like a new app; meanwhile the current configuration keeps working.",
        "此应用已启用。变更将像新应用一样接受审核；在此期间当前配置继续有效。",
    ),
    "new.title": ("Register an application", "注册应用"),
    "next.draft": (
        "Submit the application when it is ready; an administrator will review it.",
        "准备好后提交审核，管理员将进行审核。",
    ),
    "next.under_review": ("An administrator is reviewing the application.", "管理员正在审核此应用。"),
    "next.approved": (
        "Approved. Activate the application to let it sign users in.",
        "已批准。启用后即可用于用户登录。",
    ),
    "next.rejected": (
        "Rejected. Read the feedback, edit the application and submit it again.",
        "已驳回。请阅读反馈，修改后重新提交。",
    ),
    "next.active": ("Active: the application may sign users in.", "已启用：应用可以让用户登录。"),
    "next.suspended": ("Suspended by an administrator: sign-ins are refused.", "已被管理员停用：登录会被拒绝。"),
    "done.created": ("The application was registered as a draft.", "应用已注册为草稿。"),
    "done.edited": ("Your changes were saved.", "修改已保存。"),
    "done.submitted": ("Submitted for review.", "已提交审核。"),
    "done.activated": ("The application is active.", "应用已启用。"),
    "done.rotated": ("A new secret was issued; the old one no longer works.", "已签发新密钥；旧密钥已失效。"),
    "done.revision": ("Your change was submitted for review.", "变更已提交审核。"),
    "done.approved": ("Approved.", "已批准。"),
    "done.rejected": ("Rejected; the developer will see your feedback.", "已驳回；开发者将看到你的反馈。"),
    "done.suspended": ("Suspended.", "已停用。"),
    "done.reinstated": ("Reinstated.", "已恢复。"),
    "done.role": ("The role was changed.", "角色已修改。"),
    # admin
    "admin.queue": ("Review queue", "审核队列"),
    "admin.queue_lead": ("Oldest submission first.", "按提交时间从早到晚排列。"),
    "admin.queue_empty": ("Nothing is waiting for review.", "没有待审核的内容。"),
    "admin.all_apps": ("All applications", "全部应用"),
    "admin.audit": ("Audit log", "审计日志"),
    "admin.users": ("Users and roles", "用户与角色"),
    "admin.events": ("Events", "安全事件"),
    "events.lead": (
        "Security events, newest first: sign-ins, tokens, consents, keys and apps. Times are UTC.",
        "安全事件（最新的在前）：登录、令牌、授权同意、密钥与应用。时间为 UTC。",
    ),
    "events.user": ("User", "用户"),
    "events.app": ("App (client_id)", "应用（client_id）"),
    "events.type": ("Type", "类型"),
    "events.any_type": ("Any type", "任意类型"),
    "events.since": ("Since (UTC)", "起始时间（UTC）"),
    "events.time": ("Time", "时间"),
    "events.ip": ("IP address", "IP 地址"),
    "events.detail": ("Detail", "详情"),
    "events.filter": ("Filter", "筛选"),
    "events.clear": ("Clear filters", "清除筛选"),
    "events.none": ("No events match.", "没有符合条件的事件。"),
    "events.older": ("Older events", "更早的事件"),
    "events.newest": ("Newest events", "最新的事件"),
    "events.bad_type": ("That is not an event type.", "没有这种事件类型。"),
    "events.bad_since": (
        "The time is not a date and time such as 2026-01-31T08:00.",
        "时间格式不正确，请按 2026-01-31T08:00 的格式填写。",
    ),
    "events.bad_value": ("A filter holds a character that cannot be searched.", "筛选条件中含有无法搜索的字符。"),
    "events.bad_page": ("That page does not exist.", "该页不存在。"),
    "admin.kind.app": ("New application", "新应用"),
    "admin.kind.revision": ("Change to an active app", "已启用应用的变更"),
    "admin.waiting_since": ("Waiting since", "等待开始于"),
    "admin.uri_ok": ("meets the rules", "符合规则"),
    "admin.uri_check": ("Redirect URI checks", "重定向 URI 检查"),
    "admin.uri_rules": (
        "Web apps must use https (http only on a loopback host). Native apps must use a loopback IP literal "
        "(http://127.0.0.1/… or http://[::1]/…; its port may differ at every sign-in) or a private-use scheme "
        "in reverse-domain form such as edu.example.app:/callback (RFC 8252 7.1, 7.3). "
        "No fragment, wildcard or user information.",
        "Web 应用必须使用 https（仅回环地址可用 http）。原生应用必须使用回环 IP（http://127.0.0.1/… 或 "
        "http://[::1]/…，每次登录的端口可以不同）或反向域名形式的私有协议，如 edu.example.app:/callback"
        "（RFC 8252 7.1、7.3）。不得包含片段、通配符或用户信息。",
    ),
    "admin.grant": ("Grant", "授予"),
    "admin.require_mfa": ("Sign-ins need a second factor", "登录需要第二因素"),
    "app.require_mfa.yes": (
        "Every sign-in to this app uses a second factor (set by the review).",
        "登录此应用均需使用第二因素（由审核设定）。",
    ),
    "admin.grant_device": (
        "Grant sign-in on devices without a browser (device_code)",
        "授予无浏览器设备登录（device_code）",
    ),
    "admin.review": ("Review", "审核"),
    "admin.service_check": ("CAS service checks", "CAS 服务地址检查"),
    "admin.service_rules": (
        "Each service is an https URL (http only on a loopback host) without user information, fragment, query "
        "or dot segments. A ticket goes only to a service that begins with one of them at a path segment "
        "boundary (/portal covers /portal/x, never /portalx); no wildcards, no regular expressions.",
        "每个服务地址须为 https URL（仅回环地址可用 http），不得含用户信息、片段、查询或点路径段。"
        "票据只发给以其中某一地址按路径段开头的服务（/portal 包含 /portal/x，不含 /portalx）；"
        "不支持通配符和正则表达式。",
    ),
    "admin.cas_release": ("Attributes a CAS validation releases", "CAS 验证释放的属性"),
    "admin.cas_always": (
        "Every validation also carries authenticationDate, isFromNewLogin and longTermAuthenticationRequestTokenUsed.",
        "每次验证还包含 authenticationDate、isFromNewLogin 和 longTermAuthenticationRequestTokenUsed。",
    ),
    "admin.grant_cas_proxy": ("Grant proxy tickets (cas_proxy)", "授予代理票据（cas_proxy）"),
    "admin.reviewing_revision": (
        "You are reviewing a change to an active app. The configuration below replaces the current one when approved.",
        "你正在审核已启用应用的变更。批准后，下方配置将替换当前配置。",
    ),
    "admin.current": ("Current configuration", "当前配置"),
    "admin.proposed": ("Proposed configuration", "拟变更配置"),
    "admin.own_app": (
        "You own this application, so another administrator must review it.",
        "这是你自己的应用，需由其他管理员审核。",
    ),
    "admin.not_admin": ("Only administrators may use the review console.", "只有管理员可以使用审核控制台。"),
    "admin.suspend_reason": ("Reason (optional)", "原因（可选）"),
    "admin.username": ("Username", "用户名"),
    "admin.role": ("Role", "角色"),
    "admin.source": ("Account from", "账户来源"),
    "source.local": ("Local account", "本地账户"),
    "source.directory": ("University directory", "学校目录"),
    "admin.role_from_directory": ("Role set by directory groups at each sign-in", "角色在每次登录时由目录群组决定"),
    "role.student": ("Student", "学生"),
    "role.developer": ("Developer", "开发者"),
    "role.admin": ("Administrator", "管理员"),
    # the device page (RFC 8628 device authorization)
    "device.title": ("Sign in a device", "登录设备"),
    "device.lead": (
        "A bot, an SSH session or a lab machine showed you a code. Enter it here to sign it in with your "
        "university account.",
        "机器人、SSH 会话或实验室机器向你显示了一个代码。在此输入该代码，即可用你的学校账户让它登录。",
    ),
    "device.code": ("Code shown on the device", "设备上显示的代码"),
    "device.continue": ("Continue", "继续"),
    "device.hint": (
        "Only enter a code from a device you are using yourself. If someone sent you a code, do not enter it.",
        "只输入你自己正在使用的设备上显示的代码。如果代码是别人发给你的，请不要输入。",
    ),
    "device.err.empty": ("Enter the code your device shows.", "请输入设备上显示的代码。"),
    "device.err.too_long": (
        "That is far too long to be a code. Codes have 8 letters, like BCDF-GHJK.",
        "输入内容太长，不可能是代码。代码由 8 个字母组成，例如 BCDF-GHJK。",
    ),
    "device.err.malformed": (
        "That is not a code from a device. Codes have 8 letters (no vowels, no digits), like BCDF-GHJK.",
        "这不是设备代码。代码由 8 个字母组成（不含元音和数字），例如 BCDF-GHJK。",
    ),
    "device.err.unknown": (
        "This code is not valid: it may be mistyped, expired or already used. Check the device and try again.",
        "此代码无效：可能输入有误、已过期或已被使用。请核对设备后重试。",
    ),
    "device.err.form": ("The form could not be read:", "无法读取表单："),
    "device.err.csrf": (
        "The form expired or was not sent from this page. Reload the page and enter the code again.",
        "表单已过期或并非从本页提交。请刷新页面后重新输入代码。",
    ),
    "device.err.limited": (
        "Too many wrong codes were entered from your network. For your security, wait {minutes} minute(s) "
        "and try again.",
        "你所在网络输入的错误代码过多。为了你的安全，请等待 {minutes} 分钟后重试。",
    ),
    "consent.title": ("Allow {app}?", "允许 {app} 访问？"),
    "consent.lead": ("Signed in as {name}. {app} ({host}) asks to:", "当前用户：{name}。{app}（{host}）请求："),
    "consent.allow": ("Allow", "允许"),
    "consent.deny": ("Deny", "拒绝"),
    "consent.hint": (
        "You can change your mind later; the application will have to ask again.",
        "你之后可以随时撤销；撤销后该应用需要重新征得你的同意。",
    ),
    "consent.choose": ("Choose Allow or Deny.", "请选择“允许”或“拒绝”。"),
    "device.consent.title": ("Sign in {app} on your device?", "允许 {app} 在你的设备上登录？"),
    "device.consent.lead": (
        "Signed in as {name}. The device that showed you the code runs {app} and asks to:",
        "当前用户：{name}。显示代码的设备运行的是 {app}，它请求：",
    ),
    "device.consent.warning": (
        "Only allow this if you started this sign-in yourself, on a device you recognise (your bot, your SSH "
        "session, the lab machine in front of you). If someone else gave you the code, deny: allowing would "
        "let them use your account.",
        "只有在你自己发起此次登录、且认得这台设备（你的机器人、你的 SSH 会话、你面前的实验室机器）时才允许。"
        "如果代码是别人给你的，请拒绝：允许会让对方使用你的账户。",
    ),
    "device.allow": ("Allow", "允许"),
    "device.deny": ("Deny", "拒绝"),
    "device.allowed.title": ("Your device is signed in", "设备已登录"),
    "device.allowed.text": (
        "{app} on your device is now signed in as you. Go back to the device; you can close this window.",
        "你设备上的 {app} 现已以你的身份登录。请回到设备继续；此窗口可以关闭。",
    ),
    "device.denied.title": ("Sign-in denied", "已拒绝登录"),
    "device.denied.text": (
        "The device was not signed in. If you did not start this sign-in, nothing more is needed.",
        "设备未登录。如果这次登录不是你发起的，无需再做任何操作。",
    ),
    "device.gone.title": ("This sign-in can no longer continue", "此次登录无法继续"),
    "device.gone.text": (
        "The code has expired or was already used, or the application was suspended. Start again on the device "
        "to get a new code.",
        "代码已过期或已被使用，或该应用已被停用。请在设备上重新开始以获取新代码。",
    ),
    "scope.openid": ("Sign you in", "让你登录"),
    "scope.profile": ("Your name", "你的姓名"),
    "scope.email": ("Your e-mail address", "你的电子邮件地址"),
    "scope.offline_access": ("Stay signed in when you are not using it", "在你不使用时保持登录"),
    "scope.student_number": ("Your student number", "你的学号"),
    "scope.grades.read": ("Read your grades", "读取你的成绩"),
    # errors
    "err.title": ("That did not work", "操作未完成"),
    "err.403": ("You are not allowed to do that.", "你无权执行此操作。"),
    "err.404": ("That application does not exist.", "该应用不存在。"),
    "err.409": ("That step is not possible in the application's current state.", "该应用当前状态下不能执行此操作。"),
    "err.422": ("Please correct the form.", "请修改表单。"),
    "err.400": ("The form could not be read.", "无法读取表单。"),
    # second factors (docs/mfa.md)
    "mfa.title": ("Two-step verification", "两步验证"),
    "mfa.lead": (
        "Enter the 6-digit code from your authenticator app, or one of your recovery codes.",
        "请输入身份验证器应用中的 6 位验证码，或一个恢复码。",
    ),
    "mfa.code": ("Code", "验证码"),
    "mfa.verify": ("Verify", "验证"),
    "mfa.continue": ("Continue", "继续"),
    "mfa.recovery_hint": (
        "Lost your phone? Use a recovery code, or ask the IT service desk to reset your second factor.",
        "手机丢失？请使用恢复码，或请 IT 服务台重置您的第二因素。",
    ),
    "mfa.bad_code": (
        "Enter the 6 digits your authenticator app shows, or a 12-character recovery code.",
        "请输入身份验证器应用显示的 6 位数字，或 12 位恢复码。",
    ),
    "mfa.wrong_code": (
        "That code is not correct, or it was already used. Wait for the next code and try again.",
        "验证码不正确或已被使用。请等待下一个验证码后重试。",
    ),
    "totp.title": ("Set up an authenticator app", "设置身份验证器应用"),
    "totp.required": (
        "Your account must use a second factor. Set one up to continue.",
        "您的账户必须使用第二因素。请先完成设置再继续。",
    ),
    "totp.lead": (
        "Scan the QR code with an authenticator app (or type the key), then enter the code it shows.",
        "请用身份验证器应用扫描二维码（或手动输入密钥），然后输入应用显示的验证码。",
    ),
    "totp.qr_alt": ("QR code for your authenticator app", "身份验证器应用的二维码"),
    "totp.secret": ("Key:", "密钥："),
    "totp.code": ("Code from the app", "应用中的验证码"),
    "totp.confirm": ("Confirm", "确认"),
    "totp.wrong_code": (
        "That code does not match. Check the time on your phone and enter the current code.",
        "验证码不匹配。请检查手机时间并输入当前验证码。",
    ),
    "totp.done": ("Authenticator app set up", "身份验证器应用已设置"),
    "totp.already": ("Your authenticator app is already set up.", "您的身份验证器应用已设置。"),
    "totp.back": ("Back to your account", "返回我的账户"),
    "recovery.lead": (
        "Keep these recovery codes somewhere safe. Each works once, if you lose your phone. They are shown only now.",
        "请妥善保存这些恢复码。每个恢复码只能使用一次，用于手机丢失时登录。它们只显示这一次。",
    ),
    # the account page
    "account.title": ("Your account", "我的账户"),
    "account.profile": ("Profile", "个人资料"),
    "account.username": ("Username", "用户名"),
    "account.name": ("Name", "姓名"),
    "account.email": ("Email", "电子邮箱"),
    "account.student_number": ("Student number", "学号"),
    "account.sessions": ("Your sessions", "我的会话"),
    "account.this_session": ("This browser", "当前浏览器"),
    "account.device": ("Device", "设备"),
    "account.ip": ("IP address", "IP 地址"),
    "account.last_seen": ("Last seen", "最近活动"),
    "account.signed_in": ("Signed in", "登录时间"),
    "account.end_session": ("Sign out", "退出"),
    "account.signout_others": ("Sign out everywhere else", "退出所有其他会话"),
    "account.no_other_sessions": ("No other sessions.", "没有其他会话。"),
    "account.apps": ("Connected apps", "已连接的应用"),
    "account.no_apps": ("No app has access to your account.", "没有应用可以访问您的账户。"),
    "account.scopes": ("Access", "权限"),
    "account.revoke_app": ("Remove access", "移除访问权限"),
    "account.security": ("Security", "安全"),
    "account.totp": ("Authenticator app", "身份验证器应用"),
    "account.totp_on": ("On", "已开启"),
    "account.totp_off": ("Not set up", "未设置"),
    "account.totp_setup": ("Set up", "设置"),
    "account.remove_factor": ("Remove", "移除"),
    "account.passkeys": ("Passkeys", "通行密钥"),
    "passkey.title": ("Passkey", "通行密钥"),
    "passkey.enrol": ("Add a passkey", "添加通行密钥"),
    "passkey.verify": ("Use a passkey instead", "改用通行密钥"),
    "account.done.passkey": ("Your passkey was added.", "通行密钥已添加。"),
    "account.recovery": ("Recovery codes left", "剩余恢复码"),
    "account.new_codes": ("Make new recovery codes", "生成新的恢复码"),
    "account.password": ("Change password", "修改密码"),
    "account.current_password": ("Current password", "当前密码"),
    "account.new_password": ("New password", "新密码"),
    "account.save_password": ("Change password", "修改密码"),
    "account.password_changed": ("Your password was changed.", "密码已修改。"),
    "account.password_wrong": ("The current password is not correct.", "当前密码不正确。"),
    "account.password_short": (
        "The new password must be {min} to {max} characters.",
        "新密码长度须为 {min} 到 {max} 个字符。",
    ),
    "account.done.session": ("That session was signed out.", "该会话已退出。"),
    "account.done.others": ("Every other session was signed out.", "所有其他会话均已退出。"),
    "account.done.app": ("The app no longer has access to your account.", "该应用已无法访问您的账户。"),
    "account.done.factor": ("The factor was removed.", "该因素已移除。"),
    "account.done.password": ("Your password was changed.", "密码已修改。"),
    "logout.title": ("Sign out", "退出登录"),
    "logout.signed_in_as": ("You are signed in as", "您当前登录的身份是"),
    "logout.question": ("Sign out of the university sign-in service?", "要退出大学统一登录服务吗？"),
    "logout.asked_by": ("Sign-out requested by", "请求退出的应用："),
    "logout.no_session": (
        "You are not signed in here. Continue back to the application?",
        "您当前未在此登录。要返回该应用吗？",
    ),
    "logout.confirm": ("Sign out", "退出登录"),
    "logout.continue": ("Continue", "继续"),
    "logout.everywhere": (
        "Signing out here also signs you out of the university applications you used in this session.",
        "在此退出后，您在本次会话中使用过的大学应用也会一并退出。",
    ),
    "logout.signed_out": ("Signed out", "已退出"),
    "logout.signed_out_heading": ("You are signed out", "您已退出登录"),
    "logout.signed_out_lead": (
        "Your session on this sign-in service has ended, and the applications you used in it are being told.",
        "您在本登录服务上的会话已结束，正在通知您在本次会话中使用过的应用。",
    ),
    "logout.not_followed": (
        "You were not sent anywhere. If you want to sign out, use the button below; "
        "otherwise go back to the application.",
        "系统没有将您转到任何地方。如需退出，请使用下方按钮；否则请返回该应用。",
    ),
    "logout.err.malformed": (
        "This sign-out request is malformed: a parameter is repeated, too long or not valid text.",
        "此退出请求格式错误：某个参数重复、过长或不是有效文本。",
    ),
    "logout.err.too_long": ("This sign-out request has a parameter that is too long.", "此退出请求中有参数过长。"),
    "logout.err.hint": (
        "The application sent an ID token that this sign-in service did not issue, or that was changed.",
        "应用发送的 ID 令牌不是本登录服务签发的，或已被篡改。",
    ),
    "logout.err.client_mismatch": (
        "The application named in the request is not the one the ID token was issued to.",
        "请求中指明的应用与 ID 令牌的签发对象不一致。",
    ),
    "logout.err.no_client": (
        "The request asks to return to an address but does not say which application it comes from.",
        "此请求要求返回某个地址，但没有说明来自哪个应用。",
    ),
    "logout.err.unknown_client": (
        "The application in this request is not known here.",
        "此请求中的应用在本服务中不存在。",
    ),
    "logout.err.uri": (
        "The address to return to is not registered for this application, so you were not sent there.",
        "要返回的地址未在此应用中注册，因此没有将您转到该地址。",
    ),
    "logout.err.form": (
        "The sign-out form expired or was not sent from this page. Nothing was changed; try again.",
        "退出表单已过期或并非从本页提交。未做任何更改；请重试。",
    ),
    "err.csrf": (
        "The form expired or was not sent from this site. Nothing was changed; reload the page and try again.",
        "表单已过期或并非从本站提交。未做任何更改；请刷新页面重试。",
    ),
}


def choose(accept_language: str | None) -> str:
    """The first supported language in the header's preference order (q-values honoured)."""
    ranked: list[tuple[float, int, str]] = []
    for index, item in enumerate((accept_language or "").split(",")[:20]):
        tag, _, params = item.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        ranked.append((-q, index, tag.strip().lower()))
    for neg_q, _, tag in sorted(ranked):
        if neg_q >= 0:
            continue
        if tag == "zh" or tag.startswith(("zh-cn", "zh-hans", "zh-sg")):
            return "zh-CN"
        if tag == "en" or tag.startswith("en-"):
            return "en"
    return "en"


def translator(lang: str) -> Callable[[str], str]:
    column = 1 if lang == "zh-CN" else 0

    def t(key: str) -> str:
        pair = _TEXT.get(key)
        return pair[column] if pair else key

    return t


def has(key: str) -> bool:
    return key in _TEXT
